"""Text from reward code or a sandboxed process, made safe to print in a terminal.

Such text is hostile (an LLM wrote the reward): as Rich markup, `[/oops]` crashes the CLI with
MarkupError; raw, an ANSI escape can clear the screen and draw a fake "fitness 500" line. So it is
never parsed as markup (a `Text` is not) and every control character but newline and tab is shown
as a visible escape (`\\x1b`). Bidirectional overrides are escaped too: they reorder what is shown.
The escaping is `rewardsmith.untrusted_text.plain`, shared with the HTML report.
"""

from __future__ import annotations

from rich.text import Text

from rewardsmith.untrusted_text import plain

__all__ = ["plain", "untrusted"]


def untrusted(text: object, style: str = "") -> Text:
    """`text` ready to print: never markup, control characters visible."""
    return Text(plain(text), style=style)
