"""Prompt templates (Jinja2, one file per role); no prompt text lives in Python code."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined


@cache
def environment() -> Environment:
    """The one Jinja environment, made once: strict about undefined variables and never escaping,
    since prompts are plain text, not HTML."""
    return Environment(
        loader=PackageLoader("rewardsmith", "prompts"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, **context: Any) -> str:
    """Render `prompts/<name>.j2`; a missing variable is an error, never a silent blank."""
    return environment().get_template(f"{name}.j2").render(**context).strip() + "\n"
