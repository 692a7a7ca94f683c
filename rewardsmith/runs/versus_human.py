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
    difference, two_se = _difference(best, human)
    verdict = "better" if difference > two_se else "as good" if difference >= -two_se else "worse"
    return {"difference": difference, "two_se": two_se, "verdict": verdict}


def _difference(a: list[float], b: list[float]) -> tuple[float, float]:
    """mean(a) - mean(b) and twice its standard error; where `b` has one value its variance is
    taken to be `a`'s (the same reward, trained the same way)."""
    var_a = statistics.variance(a)
    var_b = statistics.variance(b) if len(b) > 1 else var_a
    return statistics.fmean(a) - statistics.fmean(b), 2 * math.sqrt(var_a / len(a) + var_b / len(b))


_T_975 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 8: 2.31, 10: 2.23, 20: 2.09}
"""Student's t, two-sided 95%, by degrees of freedom (a smaller df in the table rounds down)."""


def _t_975(df: int) -> float:
    return _T_975[max(k for k in _T_975 if k <= df)] if df < 30 else 2.0


def held_up(selected_on: list[float], fresh: list[float]) -> dict[str, Any] | None:
    """Did the best keep, on the final evaluation's fresh seeds, the fitness of its search
    seed? "held" within the noise, or "fell short" beyond it (the search's figure was partly
    seed luck); None with fewer than two fresh seeds or no search fitness. The noise margin is
    Student's t at 95% times the standard error: with two fresh seeds their spread says little
    (one degree of freedom), so only a large shortfall is called one."""
    if len(fresh) < 2 or not selected_on:
        return None
    difference, two_se = _difference(fresh, selected_on)
    margin = two_se / 2 * _t_975(len(fresh) - 1 + len(selected_on) - 1)
    verdict = "fell short" if difference < -margin else "held"
    return {
        "selected_on": statistics.fmean(selected_on),
        "selected_seeds": len(selected_on),
        "difference": difference,
        "margin": margin,
        "verdict": verdict,
    }


def held_up_text(check: dict[str, Any] | None) -> str | None:
    """One line for the CLI where the best fell short of what it was selected on; None where it
    held (nothing to warn of) or there is no check."""
    if not isinstance(check, dict) or check.get("verdict") != "fell short":
        return None
    values = [check.get(k) for k in ("selected_on", "selected_seeds", "difference", "margin")]
    if not all(isinstance(v, int | float) for v in values):
        return None
    selected_on, seeds, difference, margin = (float(v) for v in values)  # type: ignore[arg-type]
    return (
        f"the best's fresh seeds fell short of its search result ({selected_on:.4g}"
        + (f", {seeds:.0f} seeds" if seeds > 1 else "")
        + f") by {-difference:.4g} (noise margin {margin:.2g}): part of that result was the "
        "training seed's luck"
    )


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


def undefined_score_text(human: float | None, sparse: float | None) -> str | None:
    """Why the human-normalised score (best - sparse) / |human - sparse| has no value where the
    human and sparse rewards scored the same (success tasks at their ceiling: Fetch, drawer-close);
    None where that is not the reason."""
    if human is None or sparse is None or human != sparse:
        return None
    return (
        f"undefined: the human and the sparse reward both scored {human:.4g} on the fresh seeds, "
        "so compare the best with the human reward directly"
    )
