"""The preference check node: rejects rewards that order known trajectories wrongly, untrained.

After CARD's Trajectory Preference Evaluation, done before training rather than after it. Every
candidate that passed the critic scores the run's trajectory bank in the sandbox
(`sandbox.score`); the orchestrator then compares the order of the returns with the order of the
task's fitness, which no reward can see:

- pairwise agreement: over the pairs of episodes whose fitness differs *clearly* (by more than
  `CLEAR_FRACTION` of the bank's fitness standard deviation), the share the reward orders the same
  way (ties count half, as in Kendall's tau). 0.5 is chance; 1.0 is fitness's own order.
- where the task has a success notion, TPE: the share of successful episodes whose return beats
  the best clearly-failed episode (CARD's rule; CARD's per-step variant is recorded too).

The return (the undiscounted sum of the per-step total) is what the check ranks by, because it is
what RL maximises: a `+1 per step` reward has no per-step signal at all, yet on CartPole it orders
episodes exactly as fitness does. Per-step means are recorded as a diagnostic and feed the
reward-hacking flag (`hacking.py`).

A candidate below the threshold is rejected with `preference_rejected` and never trained; its
feedback names the pairs it mis-ranks with short summaries of those episodes. When the bank cannot
discriminate (too few clearly ordered pairs), the candidate passes and the record says so.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from rewardsmith.envs.adapter import Episode
from rewardsmith.eureka_loop.bank import Record, TrajectoryBank, bank_for, seed_bank
from rewardsmith.eureka_loop.hacking import bank_signals
from rewardsmith.eureka_loop.state import CandidateSummary, Context, LoopState, candidate_key
from rewardsmith.prompts import render
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.sandbox.executor import Limits
from rewardsmith.sandbox.score import BankScores, score_bank
from rewardsmith.sandbox.training import make_job

PREFERENCE_FILE = "preference.json"
FEEDBACK_FILE = "preference_feedback.md"
SCORE_LIMITS = Limits(wall_s=120.0, memory_mb=4096)
CLEAR_FRACTION = 0.25  # of the bank's fitness std: closer pairs are not "clearly" ordered
MIN_CLEAR_PAIRS = 20  # fewer than this and the bank cannot discriminate: pass, never guess
MIN_EPISODES = 6  # ... nor when the clear pairs involve fewer distinct episodes than this
MIN_TPE_EPISODES = 3  # successes and clear failures each needed before TPE counts
TPE_THRESHOLD = 0.5
PAIRS_SHOWN = 3
FIELDS_SHOWN = 3


@dataclass
class Assessment:
    """The check's numbers and verdict for one candidate, as stored in preference.json."""

    score: float | None
    pairwise: float | None
    pairwise_per_step: float | None
    tpe: float | None
    tpe_per_step: float | None
    n_pairs: int
    margin: float
    discriminating: bool
    passed: bool
    reason: str
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


def tpe_share(values: np.ndarray, fitness: np.ndarray, success: np.ndarray, margin: float) -> float | None:
    """CARD's rule: the share of successful episodes whose value beats every clear failure's.

    Failures within `margin` of the worst success are left out: a 499-step CartPole episode is not
    clearly worse than a 500-step one, and one near-miss should not decide the verdict.
    """
    wins = success == 1
    if wins.sum() < MIN_TPE_EPISODES:
        return None
    floor = float(np.min(fitness[wins]))
    failed = (success == 0) & (fitness < floor - margin)
    if failed.sum() < MIN_TPE_EPISODES:
        return None
    return float(np.mean(values[wins] > np.max(values[failed])))


def assess(
    fitness: np.ndarray,
    success: np.ndarray,
    returns: np.ndarray,
    per_step: np.ndarray,
    threshold: float,
) -> Assessment:
    """Compare the reward's order of the bank with fitness's; pass unless it clearly disagrees."""
    better, worse, margin = clear_pairs(fitness)
    involved = len(np.union1d(better, worse))
    pairwise = agreement(returns, better, worse)
    result = Assessment(
        score=pairwise,
        pairwise=pairwise,
        pairwise_per_step=agreement(per_step, better, worse),
        tpe=tpe_share(returns, fitness, success, margin),
        tpe_per_step=tpe_share(per_step, fitness, success, margin),
        n_pairs=len(better),
        margin=margin,
        discriminating=len(better) >= MIN_CLEAR_PAIRS and involved >= MIN_EPISODES,
        passed=True,
        reason="",
    )
    if not result.discriminating or pairwise is None:
        result.reason = (
            f"the bank cannot discriminate: {len(better)} clearly ordered pairs over {involved} episodes "
            f"(at least {MIN_CLEAR_PAIRS} pairs over {MIN_EPISODES} episodes are needed); passed unchecked"
        )
        return result
    failures = []
    if pairwise < threshold:
        failures.append(f"pairwise agreement {pairwise:.2f} < {threshold:.2f} on {len(better)} clearly ordered pairs")
    if result.tpe is not None and result.tpe < TPE_THRESHOLD:
        failures.append(f"only {result.tpe:.0%} of successful episodes out-earn every clearly failed one (TPE < {TPE_THRESHOLD:.0%})")
    result.passed = not failures
    result.reason = "; ".join(failures) if failures else (
        f"pairwise agreement {pairwise:.2f} >= {threshold:.2f} on {len(better)} clearly ordered pairs"
        + (f"; TPE {result.tpe:.2f}" if result.tpe is not None else "")
    )
    # The worst mistakes first: clear pairs ordered backwards, largest fitness gap first.
    wrong = np.flatnonzero(returns[better] < returns[worse])
    wrong = wrong[np.argsort(-(fitness[better[wrong]] - fitness[worse[wrong]]), kind="stable")]
    chosen: list[tuple[int, int]] = []
    used: set[int] = set()
    for k in wrong:
        b, w = int(better[k]), int(worse[k])
        if b in used or w in used:
            continue  # distinct episodes make more instructive examples
        chosen.append((b, w))
        used.update((b, w))
        if len(chosen) == PAIRS_SHOWN:
            break
    result.mis_ranked = chosen
    return result


# --- feedback --------------------------------------------------------------------------------


def _field_means(episode: Episode) -> dict[str, float]:
    means = {}
    for name, values in episode.states.items():
        rows = values[1:] if len(values) > 1 else values
        means[name] = float(np.mean(np.linalg.norm(rows, axis=1) if rows.ndim > 1 else rows))
    return means


def episode_summary(
    record: Record, scores: BankScores, index: int, fields: list[str], source: str
) -> dict[str, Any]:
    """A few numbers that let the designer picture an episode."""
    episode, fitness, success = record
    means = _field_means(episode)
    components = sorted(scores.components.items(), key=lambda kv: -abs(kv[1][index]))[:3]
    return {
        "source": source,
        "length": episode.length,
        "ended": "terminated" if episode.terminated else ("truncated (time limit)" if episode.truncated else "cut off"),
        "fitness": fitness,
        "success": success,
        "fields": {name: means[name] for name in fields if name in means},
        "reward_return": scores.returns[index],
        "reward_per_step": scores.per_step[index],
        "components": {name: values[index] for name, values in components},
    }


def telling_fields(records: list[Record], pairs: list[tuple[int, int]], limit: int = FIELDS_SHOWN) -> list[str]:
    """The fields whose episode means differ most (in bank standard deviations) across the pairs."""
    if not pairs:
        return []
    means = [_field_means(r[0]) for r in records]
    names = list(means[0])
    spread = {n: float(np.std([m[n] for m in means])) or 1.0 for n in names}
    gaps = {n: float(np.mean([abs(means[b][n] - means[w][n]) for b, w in pairs])) / spread[n] for n in names}
    return sorted(names, key=lambda n: -gaps[n])[:limit]


def feedback_text(
    assessment: Assessment, records: list[Record], scores: BankScores, sources: list[str], fitness_description: str
) -> str:
    fields = telling_fields(records, assessment.mis_ranked)
    pairs = [
        {
            "better": episode_summary(records[b], scores, b, fields, sources[b]),
            "worse": episode_summary(records[w], scores, w, fields, sources[w]),
        }
        for b, w in assessment.mis_ranked
    ]
    return render(
        "preference_feedback",
        assessment=asdict(assessment),
        pairs=pairs,
        fitness_description=fitness_description,
        n_episodes=len(records),
    )


# --- the node --------------------------------------------------------------------------------


def preference_totals(run_path: Path) -> dict[str, Any]:
    """Checks, rejections and training steps saved over the whole run, from the candidates' files.

    Read from disk rather than accumulated, so a resumed run counts every check exactly once.
    """
    totals = {"checks": 0, "rejected": 0, "passed_unchecked": 0, "steps_saved": 0, "check_wall_s": 0.0}
    for path in sorted(run_path.glob("round_*/cand_*/" + PREFERENCE_FILE)):
        record = json.loads(path.read_text())
        totals["checks"] += 1
        totals["rejected"] += int(not record["passed"])
        totals["passed_unchecked"] += int(record["passed"] and not record.get("discriminating", True))
        totals["steps_saved"] += int(record.get("steps_saved", 0))
        totals["check_wall_s"] += float(record.get("wall_s", 0.0))
    totals["check_wall_s"] = round(totals["check_wall_s"], 2)
    return totals


def check_candidate(
    ctx: Context, summary: CandidateSummary, records: list[Record], sources: list[str], bank: TrajectoryBank, steps: int
) -> CandidateSummary:
    """Score the bank with one candidate and decide; writes preference.json (and the feedback)."""
    summary = dict(summary)  # type: ignore[assignment]
    round_, idx = summary["round"], summary["idx"]
    cand_dir = ctx.run.candidate_dir(round_, idx)
    scores = score_bank((cand_dir / "reward.py").read_text(), cand_dir / "preference", bank.path, ctx.sandbox, SCORE_LIMITS)
    info = bank.info()
    record: dict[str, Any] = {"bank_size": len(records), "bank_version": info.version, "wall_s": round(scores.wall_s, 3)}
    if not scores.ok:
        # The reward failed on real recorded states: it would fail the same way in training.
        assert scores.error is not None
        error = scores.error
        record.update(passed=False, discriminating=True, category=error.category.value, message=error.message, steps_saved=steps)
        ctx.run.write_candidate_file(round_, idx, PREFERENCE_FILE, record)
        message = f"on the trajectory bank: {error}"
        summary.update(status="rejected", category=error.category.value, message=message)
        ctx.run.upsert_candidate(round_, idx, status="rejected", category=error.category.value, message=message)
        ctx.reporter.candidate(round_, idx, "rejected", message)
        return summary
    fitness = np.array([f for _, f, _ in records], dtype=np.float64)
    success = np.array([-1 if s is None else int(s) for _, _, s in records])
    returns, per_step = np.asarray(scores.returns), np.asarray(scores.per_step)
    result = assess(fitness, success, returns, per_step, ctx.config.preference_threshold)
    record.update(asdict(result))
    record["threshold"] = ctx.config.preference_threshold
    record["steps_saved"] = 0 if result.passed else steps
    record["hacking"] = bank_signals(fitness, returns, per_step)
    record["returns"] = scores.returns
    record["per_step"] = scores.per_step
    if result.passed:
        ctx.run.write_candidate_file(round_, idx, PREFERENCE_FILE, record)
        note = f"preference {result.score:.2f}" if result.discriminating and result.score is not None else "preference: bank cannot discriminate"
        ctx.reporter.candidate(round_, idx, "accepted", note)
        return summary
    text = feedback_text(result, records, scores, sources, ctx.adapter.fitness_description)
    ctx.run.write_candidate_file(round_, idx, FEEDBACK_FILE, text)
    record["category"] = ErrorCategory.PREFERENCE_REJECTED.value
    record["message"] = result.reason
    ctx.run.write_candidate_file(round_, idx, PREFERENCE_FILE, record)
    message = f"{result.reason}; not trained ({steps:,} steps saved)"
    summary.update(status="rejected", category=ErrorCategory.PREFERENCE_REJECTED.value, message=message)
    ctx.run.upsert_candidate(round_, idx, status="rejected", category=ErrorCategory.PREFERENCE_REJECTED.value, message=message)
    ctx.reporter.candidate(round_, idx, "rejected", f"preference_rejected: {message}")
    return summary


def preference_check(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    if not ctx.config.preference_check:
        return {}
    candidates = state.get("candidates", [])
    pending = [c for c in candidates if c.get("status") == "designed"]
    if not pending:
        return {}
    bank = bank_for(ctx.run.path)
    seed_bank(ctx.adapter, bank, ctx.config.seed, ctx.reporter.message)
    records, sources = bank.load(), bank.info().sources
    steps = make_job(ctx.adapter, steps=ctx.config.steps, seed=0, algo=ctx.config.algo).steps
    with ThreadPoolExecutor(max_workers=max(1, ctx.config.parallel), thread_name_prefix="preference") as pool:
        checked = {
            (c["round"], c["idx"]): c
            for c in pool.map(lambda c: check_candidate(ctx, c, records, sources, bank, steps), pending)
        }
    totals = preference_totals(ctx.run.path)
    ctx.run.update_summary(preference=totals)
    rejected = [candidate_key(k[0], k[1]) for k, c in checked.items() if c.get("status") == "rejected"]
    if rejected:
        ctx.reporter.message(
            f"preference check: {len(rejected)} of {len(pending)} rejected before training; "
            f"{totals['steps_saved']:,} training steps saved so far"
        )
    return {"candidates": [checked.get((c["round"], c["idx"]), c) for c in candidates]}
