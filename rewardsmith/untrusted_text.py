"""Text from reward code or a sandboxed process, with its control characters made visible.

Such text is hostile (an LLM wrote the reward): raw, an ANSI escape can clear a terminal and
draw a fake "fitness 500" line, and a bidirectional override reorders what is shown, in a
terminal or a web page (Trojan Source). So every control character but newline and tab, and
every bidi control, is shown as a visible escape (`\\x1b`, `\\u202e`). One helper for every
place that shows such text: the terminal (`rewardsmith.commands.text`) and the HTML report
(`rewardsmith.runs.report`); it lives below both layers.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def plain(text: object) -> str:
    """`text` as a string with its control characters (but newline and tab) escaped."""
    return _CONTROL.sub(_escape, str(text))
