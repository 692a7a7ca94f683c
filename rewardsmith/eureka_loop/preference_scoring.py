"""The preference check's statistics: how well a reward's returns order known trajectories.

Pure functions of the bank's fitness and a reward's per-episode scores (no sandbox, no run
store), so they are tested and benchmarked alone; the node is `preference.py`.

After CARD's Trajectory Preference Evaluation, done before training rather than after it. Every
candidate that passed the critic scores the run's trajectory bank in the sandbox
(`sandbox.score`); the orchestrator then compares the order of the returns with the order of the
task's fitness, which no reward can see:

- the score: pairwise agreement over the pairs of episodes whose fitness differs *clearly* (by more
  than `CLEAR_FRACTION` of the bank's fitness standard deviation), the share the reward orders the
  same way (ties count half, as in Kendall's tau); 0.5 is chance, 1.0 is fitness's own order.
  Episodes are compared by their *discounted* return from the first step, with the learner's own
  gamma, because that is what RL maximises: it ranks a `+1 per step` reward by length (it has no
  per-step signal at all), gives a `-1 on failure` reward credit for failing later, and sees that a
  reward paying a lot for spinning the pole before it falls beats one paying a little for a long
  calm balance (docs/benchmarks.md has the measurements behind this choice);
- where the task has a success notion, TPE: the share of successful episodes whose undiscounted
  return beats the clearly failed episodes' (CARD's rule, against their 90th percentile rather
  than their maximum so that two odd episodes cannot decide; CARD's exact rule, and its per-step
  variant, are recorded). Undiscounted, because discounted returns of long episodes saturate.

The bar is relative to the task: the environment's own reward (recorded in the bank, so no code
runs to score it) is assessed the same way, and the threshold drops to its agreement minus
`REFERENCE_SLACK` where the fitness orders episodes differently from any sensible reward (on
MountainCar the shipped reward pays for saving energy, fitness only for height; agreement 0.37).

A candidate below the bar is rejected with `preference_rejected` and never trained; its feedback
names the pairs it mis-ranks with short summaries of those episodes. When the bank cannot
discriminate (too few clearly ordered pairs), the candidate passes and the record says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rewardsmith.eureka_loop.bank import Record, episode_features
from rewardsmith.jobs.score import BankScores
from rewardsmith.prompts import render

CLEAR_FRACTION = 0.25  # of the bank's fitness std: closer pairs are not "clearly" ordered
MIN_CLEAR_PAIRS = 20  # fewer than this and the bank cannot discriminate: pass, never guess
MIN_SIDE = 4  # ... nor unless this many distinct episodes are the better, and the worse, of a pair
MIN_TPE_EPISODES = 3  # successes and clear failures each needed before TPE counts
TPE_THRESHOLD = 0.5
TPE_QUANTILE = 0.9  # the decision's TPE beats 90% of the clear failures, CARD's beats all of them
REFERENCE_SLACK = 0.15  # how far below the environment's own reward a candidate may score
PAIRS_SHOWN = 3
FIELDS_SHOWN = 3


@dataclass
class Scores:
    """One reward's per-episode numbers on the bank (a candidate's, or the environment's own)."""

    discounted: np.ndarray
    returns: np.ndarray
    per_step: np.ndarray

    @classmethod
    def from_env_rewards(cls, records: list[Record], gamma: float) -> Scores:
        """The environment's own reward, from the rewards recorded with each episode."""
        discounted, returns, per_step = [], [], []
        for episode, _, _ in records:
            rewards = episode.env_rewards
            discounted.append(float(np.sum(rewards * gamma ** np.arange(len(rewards)))))
            returns.append(float(np.sum(rewards)))
            per_step.append(float(np.mean(rewards)) if len(rewards) else 0.0)
        return cls(np.array(discounted), np.array(returns), np.array(per_step))

    @classmethod
    def from_bank_scores(cls, scores: BankScores) -> Scores:
        """A successful `BankScores` as arrays; `check_scores` made them one finite number per
        bank episode, so they line up with the bank's fitness."""
        return cls(
            np.asarray(scores.discounted), np.asarray(scores.returns), np.asarray(scores.per_step)
        )


@dataclass
class Assessment:
    """The check's numbers and verdict for one candidate, as stored in preference.json."""

    score: float | None
    pairwise_return: float | None
    pairwise_per_step: float | None
    tpe: float | None
    tpe_card: float | None
    tpe_card_per_step: float | None
    n_pairs: int
    margin: float
    discriminating: bool
    threshold: float
    passed: bool
    reason: str
    reference: dict[str, float | None] = field(default_factory=dict)
    mis_ranked: list[tuple[int, int]] = field(default_factory=list)


def clear_pairs(fitness: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """(better, worse) index arrays of every pair whose fitness differs clearly, and the margin."""
    margin = CLEAR_FRACTION * float(np.std(fitness)) if len(fitness) > 1 else 0.0
    if margin <= 1e-12:
        return np.zeros(0, int), np.zeros(0, int), margin
    diff = fitness[:, None] - fitness[None, :]
    better, worse = np.nonzero(diff > margin)
    return better, worse, margin


def agreement(values: np.ndarray, better: np.ndarray, worse: np.ndarray) -> float | None:
    """Share of pairs whose `values` order matches (ties half); None without pairs."""
    if len(better) == 0:
        return None
    scale = max(float(np.max(np.abs(values))), 1e-12)
    delta = values[better] - values[worse]
    tol = 1e-9 * scale
    agree = np.where(delta > tol, 1.0, np.where(delta < -tol, 0.0, 0.5))
    return float(np.mean(agree))


def tpe_share(
    values: np.ndarray,
    fitness: np.ndarray,
    success: np.ndarray,
    margin: float,
    quantile: float = 1.0,
) -> float | None:
    """CARD's rule: the share of successful episodes whose value beats the best clear failure's.

    Failures within `margin` of the worst success are left out: a 499-step CartPole episode is not
    clearly worse than a 500-step one. `quantile` < 1 beats that quantile of the failures instead
    of their maximum, so one or two odd failed episodes cannot decide the verdict alone.
    """
    wins = success == 1
    if wins.sum() < MIN_TPE_EPISODES:
        return None
    floor = float(np.min(fitness[wins]))
    failed = (success == 0) & (fitness < floor - margin)
    if failed.sum() < MIN_TPE_EPISODES:
        return None
    return float(np.mean(values[wins] > np.quantile(values[failed], quantile)))


def assess(
    fitness: np.ndarray,
    success: np.ndarray,
    scores: Scores,
    threshold: float,
    reference: Scores | None = None,
) -> Assessment:
    """Compare the reward's order of the bank with fitness's; pass unless it clearly disagrees."""
    better, worse, margin = clear_pairs(fitness)
    sides = min(len(np.unique(better)), len(np.unique(worse)))
    score = agreement(scores.discounted, better, worse)
    ref: dict[str, float | None] = {}
    bar, tpe_counts = threshold, True
    if reference is not None:
        ref = {
            "score": agreement(reference.discounted, better, worse),
            "tpe": tpe_share(reference.returns, fitness, success, margin, TPE_QUANTILE),
        }
        if ref["score"] is not None:
            bar = min(threshold, ref["score"] - REFERENCE_SLACK)
        tpe_counts = ref["tpe"] is None or ref["tpe"] >= TPE_THRESHOLD
    result = Assessment(
        score=score,
        pairwise_return=agreement(scores.returns, better, worse),
        pairwise_per_step=agreement(scores.per_step, better, worse),
        tpe=tpe_share(scores.returns, fitness, success, margin, TPE_QUANTILE),
        tpe_card=tpe_share(scores.returns, fitness, success, margin),
        tpe_card_per_step=tpe_share(scores.per_step, fitness, success, margin),
        n_pairs=len(better),
        margin=margin,
        discriminating=len(better) >= MIN_CLEAR_PAIRS and sides >= MIN_SIDE,
        threshold=bar,
        passed=True,
        reason="",
        reference=ref,
    )
    if not result.discriminating or score is None:
        result.reason = (
            f"the bank cannot discriminate: {len(better)} clearly ordered pairs, with "
            f"{len(np.unique(better))} distinct better and {len(np.unique(worse))} distinct worse "
            f"episodes (at least {MIN_CLEAR_PAIRS} pairs and {MIN_SIDE} of each are needed); "
            "passed unchecked"
        )
        return result
    failures = []
    lowered = ""
    if bar < threshold:
        lowered = (
            f", lowered from {threshold:.0%} as the environment's own reward scores "
            f"{ref['score']:.0%}"
        )
    if score < bar:
        failures.append(
            f"its returns agree with fitness on {score:.0%} of {len(better)} clearly ordered pairs "
            f"of episodes (at least {bar:.0%} needed{lowered})"
        )
    if tpe_counts and result.tpe is not None and result.tpe < TPE_THRESHOLD:
        failures.append(
            f"only {result.tpe:.0%} of the successful episodes earn more than "
            f"{TPE_QUANTILE:.0%} of the "
            f"clearly failed ones (at least {TPE_THRESHOLD:.0%} needed)"
        )
    result.passed = not failures
    result.reason = (
        "; ".join(failures)
        if failures
        else (
            f"its returns agree with fitness on {score:.0%} of {len(better)} clearly ordered pairs "
            f"(bar {bar:.0%}{lowered})"
            + (f"; TPE {result.tpe:.2f}" if result.tpe is not None else "")
        )
    )
    result.mis_ranked = worst_pairs(fitness, scores.discounted, better, worse)
    return result


def worst_pairs(
    fitness: np.ndarray, values: np.ndarray, better: np.ndarray, worse: np.ndarray
) -> list[tuple[int, int]]:
    """The most telling mistakes: pairs ordered backwards (or tied), largest fitness gap first,
    each episode once."""
    tol = 1e-9 * max(float(np.max(np.abs(values))), 1e-12) if len(values) else 0.0
    wrong = np.flatnonzero(values[better] <= values[worse] + tol)
    wrong = wrong[np.argsort(-(fitness[better[wrong]] - fitness[worse[wrong]]), kind="stable")]
    chosen: list[tuple[int, int]] = []
    used: set[int] = set()
    for k in wrong:
        b, w = int(better[k]), int(worse[k])
        if b in used or w in used:
            continue
        chosen.append((b, w))
        used.update((b, w))
        if len(chosen) == PAIRS_SHOWN:
            break
    return chosen


# --- feedback --------------------------------------------------------------------------------


def episode_summary(
    record: Record,
    scores: BankScores,
    index: int,
    features: dict[str, np.ndarray],
    fields: list[str],
    source: str,
) -> dict[str, Any]:
    """A few numbers that let the designer picture an episode."""
    episode, fitness, success = record
    components = sorted(scores.components.items(), key=lambda kv: -abs(kv[1][index]))[:3]
    return {
        "source": source,
        "length": episode.length,
        "ended": "terminated" if episode.terminated else "time limit",
        "fitness": fitness,
        "success": success,
        "fields": {name: float(features[name][index]) for name in fields},
        "reward_return": scores.returns[index],
        "reward_discounted": scores.discounted[index],
        "reward_per_step": scores.per_step[index],
        "components": {name: values[index] for name, values in components},
    }


def telling_fields(
    features: dict[str, np.ndarray], pairs: list[tuple[int, int]], limit: int = FIELDS_SHOWN
) -> list[str]:
    """The fields whose episode means differ most (in bank standard deviations) across the pairs."""
    if not pairs:
        return []
    gaps = {
        name: float(np.mean([abs(values[b] - values[w]) for b, w in pairs]))
        / (float(np.std(values)) or 1.0)
        for name, values in features.items()
    }
    chosen: list[str] = []
    for name in sorted(gaps, key=lambda n: -gaps[n]):
        base = name.strip("|")
        if all(c.strip("|") != base for c in chosen):  # a field or its magnitude, not both
            chosen.append(name)
    return chosen[:limit]


def feedback_text(
    assessment: Assessment,
    records: list[Record],
    scores: BankScores,
    sources: list[str],
    code: str,
    fitness_description: str,
    gamma: float,
) -> str:
    """The designer's feedback for a rejected candidate: the verdict and the pairs it got wrong."""
    features = episode_features(records)
    fields = telling_fields(features, assessment.mis_ranked)
    pairs = [
        {
            "better": episode_summary(records[b], scores, b, features, fields, sources[b]),
            "worse": episode_summary(records[w], scores, w, features, fields, sources[w]),
        }
        for b, w in assessment.mis_ranked
    ]
    return render(
        "preference_feedback",
        assessment=asdict(assessment),
        pairs=pairs,
        code=code,
        gamma=gamma,
        fitness_description=fitness_description,
        n_episodes=len(records),
    )
