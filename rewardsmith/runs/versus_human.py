"""Is the best reward better than the human one? The difference of their fresh-seed fitnesses
against its noise. No heavy imports: `show` and `evaluate` print it too."""

from __future__ import annotations

import math
import statistics
from typing import Any


def versus_human(best: list[float], human: list[float]) -> dict[str, Any] | None:
    """best - human over their fresh seeds, twice the standard error of that difference, and
    what they say: "better", "as good" (within the noise) or "worse" (beyond it). None with
    fewer than two seeds an arm, where there is no spread to judge by. The quality table
    (benchmarks/quality.py) applies the same rule to seeds pooled over runs."""
    if len(best) < 2 or len(human) < 2:
        return None
    difference = statistics.fmean(best) - statistics.fmean(human)
    two_se = 2 * math.sqrt(
        statistics.variance(best) / len(best) + statistics.variance(human) / len(human)
    )
    verdict = "better" if difference > two_se else "as good" if difference >= -two_se else "worse"
    return {"difference": difference, "two_se": two_se, "verdict": verdict}


_WORDS = {
    "better": "better than the human reward beyond the noise",
    "as good": "as good as the human reward within the noise",
    "worse": "worse than the human reward beyond the noise",
}


def versus_human_text(comparison: dict[str, Any] | None) -> str | None:
    """One line for the CLI: the difference, its noise, and the verdict in words; None where
    there is none, or where a hand-edited evaluation.json holds something else."""
    if not isinstance(comparison, dict) or comparison.get("verdict") not in _WORDS:
        return None
    difference, two_se = comparison.get("difference"), comparison.get("two_se")
    if not all(isinstance(v, int | float) for v in (difference, two_se)):
        return None
    return f"best - human = {difference:+.4g} (2 SE {two_se:.2g}): {_WORDS[comparison['verdict']]}"
