"""What a person's written feedback says about reward terms the offline designer knows by name.

The offline designer reads no prose, but it can act on a term named in it: a sentence naming a
component of the parent reward (`alive_bonus`, `shape_increase_x_position`, a human component
such as `ctrl_cost`) with a word against it ("too much", "bad", "hack", "reduce", ...) turns
that component down before the round's mutations; with a word for it ("more", "good", ...),
up. A sentence with both, or with neither, changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

AGAINST = re.compile(
    r"\b(bad|too (much|big|large|strong|high)|hack\w*|exploit\w*|remove|drop|less|lower|"
    r"reduce|wrong|hurts?|penali[sz]e|ignore|weaker|no)\b"
)
FOR = re.compile(r"\b(more|increase|raise|boost|stronger|good|better|reward it|keep)\b")
TURN_DOWN = 0.25
TURN_UP = 2.0


def named_adjustments(text: str | None, names: Iterable[str]) -> dict[str, float]:
    """The factor for each of `names` that the feedback turns down (TURN_DOWN) or up (TURN_UP);
    names it does not judge are left out."""
    if not text:
        return {}
    sentences = [s for s in re.split(r"[.!?;\n]+", text.lower()) if s.strip()]
    factors: dict[str, float] = {}
    for name in names:
        named = re.compile(rf"(?<![\w]){re.escape(name.lower())}(?![\w])")
        for sentence in sentences:
            if not named.search(sentence):
                continue
            rest = named.sub(" ", sentence)
            against, for_it = bool(AGAINST.search(rest)), bool(FOR.search(rest))
            if against != for_it:
                factors[name] = TURN_DOWN if against else TURN_UP
    return factors
