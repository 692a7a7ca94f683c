"""Reward-hacking flags: where a candidate's reward and the task's fitness part ways.

Two views, both from data the loop already has (no reward code runs here):

- on the trajectory bank (the candidate's scores from the preference check): a reward that pays
  clearly more, per step, in the low-fitness episodes (rank correlation of per-step reward with
  fitness below `BANK_CORRELATION`, and the worst third's mean per-step reward above the best
  third's by at least `MIN_GAP` of the reward's typical per-step size) invites a policy to farm it,
  even when its returns still pass the preference check (a positive per-step reward acts as an
  alive bonus on tasks that end on failure). The gap is the effect size: a correlation alone fired
  on good rewards whose per-step pay hardly varies (1.07 against 1.06); thresholds were chosen on
  labelled rewards (benchmarks/hacking_flags.py, docs/benchmarks.md);
- over training (the worker's checkpoints hold the reward return and the fitness): a return that
  keeps rising after fitness has peaked and fallen, or that moves against fitness throughout. A
  fall counts only beyond twice its standard error over the checkpoints' episodes: a checkpoint
  judges the policy on a few episodes (5 on Meta-World), and success rates of 5 episodes move
  by 0.4 between checkpoints of a policy that is not getting worse.

Either makes the candidate a `reward_hacking_suspect`: shown in the CLI and the run record, and
told to the designer. A flag is a suspicion for a person or the designer to weigh, not a verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.envs.schema import StateSchema
from rewardsmith.reward.static import fields_read
from rewardsmith.runs.candidate import candidates_on_disk

FLAG = "reward_hacking_suspect"
BANK_CORRELATION = -0.3  # per-step reward vs fitness, Spearman, over the bank
MIN_GAP = 0.1  # worst third minus best third per-step reward, over the mean |per-step reward|
TRAIN_CORRELATION = -0.5  # reward return vs fitness, Spearman, over the checkpoints
FITNESS_DROP = 0.25  # of the fitness range over training: a fall after the peak that counts
RETURN_RISE = 0.02  # of the return range over training: a rise after the fitness peak that counts
MIN_CHECKPOINTS = 4
NOISE_SE = 2.0  # a fall after the peak counts beyond this many standard errors of the difference
REFERENCE_MARGIN = 0.3  # below the environment's own reward's correlation, where that is lower


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (for Spearman's rho)."""
    order = np.argsort(values, kind="stable")
    ranked = np.empty(len(values), dtype=np.float64)
    ranked[order] = np.arange(len(values), dtype=np.float64)
    sorted_values = values[order]
    start = 0
    for end in range(1, len(values) + 1):
        if end == len(values) or sorted_values[end] != sorted_values[start]:
            ranked[order[start:end]] = (start + end - 1) / 2.0
            start = end
    return ranked


def spearman(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> float | None:
    """Spearman's rank correlation; None when either side is constant or too short."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(x) < 3 or np.ptp(x) <= 1e-12 * max(1.0, float(np.max(np.abs(x)))) or np.ptp(y) <= 0:
        return None
    rx, ry = ranks(x), ranks(y)
    if np.std(rx) == 0 or np.std(ry) == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def bank_signals(
    fitness: np.ndarray,
    returns: np.ndarray,
    per_step: np.ndarray,
    reference_per_step: np.ndarray | None = None,
) -> dict[str, Any]:
    """How the reward pays across the bank's fitness range; `suspect` with reasons.

    `reference_per_step` is the environment's own reward per step: on tasks where even that pays
    more per step in low-fitness episodes (MountainCar's energy cost), a candidate is flagged only
    when it is clearly worse than the reference.
    """
    record: dict[str, Any] = {
        "return_fitness_corr": spearman(returns, fitness),
        "per_step_fitness_corr": spearman(per_step, fitness),
        "reference_per_step_fitness_corr": spearman(reference_per_step, fitness)
        if reference_per_step is not None
        else None,
        "suspect": False,
        "reasons": [],
    }
    if len(fitness) >= 6 and np.ptp(fitness) > 0:
        order = np.argsort(fitness, kind="stable")
        third = len(order) // 3
        low, high = order[:third], order[-third:]
        record["per_step_low_fitness"] = float(np.mean(per_step[low]))
        record["per_step_high_fitness"] = float(np.mean(per_step[high]))
        size = float(np.mean(np.abs(per_step)))
        gap = record["per_step_low_fitness"] - record["per_step_high_fitness"]
        record["per_step_gap"] = gap / size if size > 0 else 0.0
    bar = BANK_CORRELATION
    if record["reference_per_step_fitness_corr"] is not None:
        bar = min(bar, record["reference_per_step_fitness_corr"] - REFERENCE_MARGIN)
    corr = record["per_step_fitness_corr"]
    pays_low = record.get("per_step_gap", 0.0) > MIN_GAP
    if corr is not None and corr < bar and pays_low:
        record["suspect"] = True
        record["reasons"].append(
            f"on the trajectory bank it pays most per step in the low-fitness episodes "
            f"(mean {record['per_step_low_fitness']:.3g} per step in the worst third vs "
            f"{record['per_step_high_fitness']:.3g} in the best third, a gap of "
            f"{record['per_step_gap']:.0%} of its typical per-step size; rank correlation with "
            f"fitness {corr:+.2f})"
        )
    return record


def training_signals(
    checkpoints: list[dict[str, Any]], noise_se: float = NOISE_SE
) -> dict[str, Any]:
    """Whether the reward return rose while fitness fell over training; `suspect` with reasons.
    `noise_se` 0 counts any fall (the rule before the noise test, for benchmarks)."""
    points = [
        c
        for c in checkpoints
        if c.get("reward_return") is not None and c.get("fitness") is not None
    ]
    record: dict[str, Any] = {
        "checkpoints": len(points),
        "reward_fitness_corr": None,
        "suspect": False,
        "reasons": [],
    }
    if len(points) < MIN_CHECKPOINTS:
        return record
    ret = np.array([c["reward_return"] for c in points], dtype=np.float64)
    fit = np.array([c["fitness"] for c in points], dtype=np.float64)
    steps = np.arange(len(points), dtype=np.float64)
    corr = spearman(ret, fit)
    record["reward_fitness_corr"] = corr
    record["reward_trend"] = spearman(ret, steps)
    record["fitness_trend"] = spearman(fit, steps)
    if reason := fall_after_peak(points, ret, fit, noise_se):
        record["suspect"] = True
        record["reasons"].append(reason)
    rising = (record["reward_trend"] or 0.0) > 0.5
    falling = (record["fitness_trend"] or 0.0) < -0.3
    if (
        not record["suspect"]
        and corr is not None
        and corr < TRAIN_CORRELATION
        and rising
        and falling
    ):
        record["suspect"] = True
        record["reasons"].append(
            f"over training its return rose while fitness fell (rank correlation {corr:+.2f} "
            f"over {len(points)} checkpoints)"
        )
    return record


def fall_after_peak(
    points: list[dict[str, Any]], ret: np.ndarray, fit: np.ndarray, noise_se: float
) -> str | None:
    """The reason to flag a return that kept rising after the fitness peak while fitness fell
    (by a meaningful share of its range, and beyond `noise_se` standard errors); else None."""
    fit_range, ret_range = float(np.ptp(fit)), float(np.ptp(ret))
    peak = int(np.argmax(fit))
    if peak > len(points) - 3 or fit_range <= 0:
        return None
    fit_end, ret_end = float(np.mean(fit[-2:])), float(np.mean(ret[-2:]))
    fell = fit[peak] - fit_end
    rose = ret_end - ret[peak]
    meaningful = fit_range > 0.05 * max(abs(float(fit[peak])), 1e-9)
    noise = noise_se * fall_standard_error(points[peak], points[-2:])
    if not (
        meaningful
        and fell > noise
        and fell > FITNESS_DROP * fit_range
        and rose > RETURN_RISE * ret_range
    ):
        return None
    beyond = f" (beyond the checkpoints' noise, {noise_se:g} SE {noise:.2g})" if noise else ""
    return (
        f"over training its return rose from {ret[peak]:.4g} to {ret_end:.4g} after the fitness "
        f"peak ({fit[peak]:.4g} at checkpoint {peak + 1}) while fitness fell to {fit_end:.4g}"
        + beyond
    )


def fall_standard_error(peak: dict[str, Any], end: list[dict[str, Any]]) -> float:
    """The standard error of (peak fitness - mean fitness of the `end` checkpoints), from their
    per-episode fitness (Welch); 0 where a checkpoint does not list its episodes (older runs)."""
    peak_episodes = peak.get("fitness_per_episode") or []
    end_episodes = [f for c in end for f in c.get("fitness_per_episode") or []]
    if (
        len(peak_episodes) < 2
        or len(end_episodes) < 2
        or any(not c.get("fitness_per_episode") for c in end)
    ):
        return 0.0
    a, b = np.asarray(peak_episodes, np.float64), np.asarray(end_episodes, np.float64)
    return float(np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)))


def combine(bank: dict[str, Any] | None, training: dict[str, Any] | None) -> dict[str, Any]:
    """One flag record for a candidate: `suspect`, the reasons, and both views' numbers."""
    reasons = [*(bank or {}).get("reasons", []), *(training or {}).get("reasons", [])]
    return {
        "flag": FLAG if reasons else None,
        "suspect": bool(reasons),
        "reasons": reasons,
        "bank": bank,
        "training": training,
    }


def outcome_fields_read(
    schema: StateSchema, source: str, human_source: str | None = None
) -> list[str]:
    """Fields the reward reads that give away the episode's outcome (BAD_REWARDS case 25).

    Fields the task's own human reward reads are not counted: the task's author pays for those
    outcomes on purpose (LunarLander's +-100 for resting or crashing), so flagging them flagged
    the human reward itself and every candidate that builds on it.
    """
    revealing = {f.name for f in schema.fields if f.reveals_outcome}
    sanctioned = fields_read(human_source) if human_source else set()
    return sorted((fields_read(source) & revealing) - sanctioned)


def outcome_field_reason(fields: list[str]) -> str:
    """The one wording of an outcome-field warning, for the critic's verdict and the run's list
    of hacking suspects alike."""
    return (
        f"reads {', '.join(fields)}, which reveal(s) the episode's success or failure: the reward "
        "may pay for the outcome signal instead of shaping the behaviour that leads to it"
    )


def hacking_suspects(run_path: Path) -> list[dict[str, Any]]:
    """Every flagged candidate of the run: trained ones from their analysis, and the ones the
    preference check rejected whose bank scores were already suspect."""
    suspects = []
    for files in candidates_on_disk(run_path):
        reasons: list[str] = []
        leaked = (files.critique() or {}).get("outcome_fields", [])
        analysis, checked = files.analysis(), files.preference()
        trained = analysis is not None
        if analysis is not None:
            reasons = (analysis.get("hacking") or {}).get("reasons", [])
        elif checked is not None and not checked.get("passed", True):
            reasons = (checked.get("hacking") or {}).get("reasons", [])
        if leaked:
            reasons = [*reasons, outcome_field_reason(leaked)]
        if reasons:
            suspects.append(
                {
                    "candidate": str(files.key),
                    "flag": FLAG,
                    "trained": trained,
                    "reasons": reasons,
                }
            )
    return suspects
