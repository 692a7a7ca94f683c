"""Text from reward code or a sandboxed process, made safe to print in a terminal.

Such text is hostile (an LLM wrote the reward): as Rich markup, `[/oops]` crashes the CLI with
MarkupError; raw, an ANSI escape can clear the screen and draw a fake "fitness 500" line. So it is
never parsed as markup (a `Text` is not) and every control character but newline and tab is shown
as a visible escape (`\\x1b`). Bidirectional overrides are escaped too: they reorder what is shown.
"""

from __future__ import annotations

import re

from rich.text import Text

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def plain(text: object) -> str:
    """`text` as a string with its control characters (but newline and tab) escaped."""
    return _CONTROL.sub(_escape, str(text))


def untrusted(text: object, style: str = "") -> Text:
    """`text` ready to print: never markup, control characters visible."""
    return Text(plain(text), style=style)
