"""`rewardsmith run`'s options, built from the typed config (`eureka_loop/config.py`).

Each option is declared once, as a `LoopConfig` field with its help; this module turns those
fields into Typer parameters, so the flag, its default, its help and the choices of an enum
(Typer refuses any other value and lists the allowed ones) come from that one place.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from rewardsmith.eureka_loop.config import Cli, LoopConfig

Command = TypeVar("Command", bound=Callable[..., Any])


def config_options() -> dict[str, inspect.Parameter]:
    """One keyword-only Typer parameter per `LoopConfig` field that has a `cli` entry."""
    hints = typing.get_type_hints(LoopConfig)
    options = {}
    for spec in dataclasses.fields(LoopConfig):
        cli: Cli | None = spec.metadata.get("cli")
        if cli is None:
            continue
        default: Any = spec.default
        if default is dataclasses.MISSING:
            default = spec.default_factory()  # type: ignore[operator]
        flag = typer.Option(*cli.flags, help=cli.help, min=cli.min, max=cli.max, envvar=cli.envvar)
        options[spec.name] = inspect.Parameter(
            spec.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=default,
            annotation=Annotated[hints[spec.name], flag],
        )
    return options


def with_config_options(command: Command) -> Command:
    """Give `command` (which takes `**options`) the config's options after its own.

    Typer reads a function's `__signature__`; the command's own parameters are resolved first
    (their annotations may be strings under `from __future__ import annotations`).
    """
    own = inspect.signature(command, eval_str=True)
    kept = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in kept]
    command.__signature__ = own.replace(parameters=[*keyword, *config_options().values()])  # type: ignore[attr-defined]
    return command
