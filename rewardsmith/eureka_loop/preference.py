"""The preference check node: rejects rewards that order known trajectories wrongly, untrained.

After CARD's Trajectory Preference Evaluation, done before training rather than after it. Every
candidate that passed the critic scores the run's trajectory bank in the sandbox
(`sandbox.score`); `preference_scoring` then compares the order of the returns with the order of
the task's fitness, which no reward can see, and sets the bar relative to the environment's own
reward. A candidate below the bar is rejected with `preference_rejected` and never trained; its
feedback names the pairs it mis-ranks. Its record is the candidate's `preference.json`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.bank import (
    Record,
    TrajectoryBank,
    bank_for,
    seed_bank,
)
from rewardsmith.eureka_loop.baseline import ENV_REWARD_COMPONENT, is_env_reward
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.hacking import bank_signals, hacking_suspects
from rewardsmith.eureka_loop.preference_scoring import Scores, assess, feedback_text
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateStatus,
    CandidateSummary,
    Context,
    LoopState,
    mark,
)
from rewardsmith.jobs.score import BankScores, score_bank
from rewardsmith.jobs.training import make_job
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.runs import layout
from rewardsmith.runs.candidate import CandidateFiles, candidates_on_disk
from rewardsmith.sandbox.types import Limits

PREFERENCE_FILE = layout.PREFERENCE
FEEDBACK_FILE = layout.PREFERENCE_FEEDBACK
SCORE_LIMITS = Limits(wall_s=120.0, memory_mb=4096)
DEFAULT_GAMMA = 0.99  # Stable-Baselines3's default for PPO and SAC


# --- the node --------------------------------------------------------------------------------


def preference_totals(run_path: Path) -> dict[str, Any]:
    """Checks, rejections and training steps saved over the whole run, from the candidates' files.

    Read from disk rather than accumulated, so a resumed run counts every check exactly once.
    """
    totals = {
        "checks": 0,
        "rejected": 0,
        "passed_unchecked": 0,
        "steps_saved": 0,
        "check_wall_s": 0.0,
    }
    for files in candidates_on_disk(run_path):
        record = files.preference()
        if record is None:
            continue
        totals["checks"] += 1
        totals["rejected"] += int(not record["passed"])
        totals["passed_unchecked"] += int(
            record["passed"] and not record.get("discriminating", True)
        )
        totals["steps_saved"] += int(record.get("steps_saved", 0))
        totals["check_wall_s"] += float(record.get("wall_s", 0.0))
    totals["check_wall_s"] = round(totals["check_wall_s"], 2)
    return totals


@dataclass
class BankView:
    """The bank as one node invocation sees it: loaded once, shared by the parallel checks."""

    bank: TrajectoryBank
    records: list[Record]
    sources: list[str]
    fitness: np.ndarray
    success: np.ndarray
    reference: Scores
    gamma: float

    @classmethod
    def load(cls, bank: TrajectoryBank, gamma: float) -> BankView:
        """Read the bank once, with the environment reward's scores as the reference order;
        success is -1 for an episode that has none (its task defines no success)."""
        records = bank.load()
        return cls(
            bank=bank,
            records=records,
            sources=bank.info().sources,
            fitness=np.array([f for _, f, _ in records], dtype=np.float64),
            success=np.array([-1 if s is None else int(s) for _, _, s in records]),
            reference=Scores.from_env_rewards(records, gamma),
            gamma=gamma,
        )


def learner_gamma(ctx: Context) -> float:
    """The discount the candidate would be trained with."""
    job = make_job(
        ctx.adapter,
        steps=ctx.config.steps or ctx.adapter.training.loop_steps,
        seed=0,
        algo=ctx.config.algo,
    )
    return float(job.hyperparams.get("gamma", DEFAULT_GAMMA))


def env_reward_scores(view: BankView) -> BankScores:
    """The environment's own reward on the bank, from the rewards recorded with each episode."""
    reference = view.reference
    return BankScores(
        ok=True,
        returns=reference.returns.tolist(),
        discounted=reference.discounted.tolist(),
        per_step=reference.per_step.tolist(),
        components={ENV_REWARD_COMPONENT: reference.returns.tolist()},
    )


def score_candidate(ctx: Context, files: CandidateFiles, view: BankView) -> BankScores:
    """Run the candidate's reward over the bank, in the sandbox (the environment's own reward
    needs no run: the bank recorded it)."""
    source = files.reward_code()
    if is_env_reward(source):
        return env_reward_scores(view)
    return score_bank(
        source,
        files.path / layout.PREFERENCE_DIR,
        view.bank.path,
        ctx.sandbox,
        SCORE_LIMITS,
        view.gamma,
        on_poll=ctx.raise_if_cancelled,
    )


def _reject(ctx: Context, summary: CandidateSummary, category: str, message: str) -> None:
    detail = f"{category}: {message}"
    mark(ctx, summary, CandidateStatus.REJECTED, detail, category=category, message=message)


def check_candidate(
    ctx: Context, summary: CandidateSummary, view: BankView, steps: int
) -> CandidateSummary:
    """Score the bank with one candidate and decide; writes preference.json (and the feedback)."""
    summary = dict(summary)  # type: ignore[assignment]
    key = CandidateKey.of(summary)
    files = ctx.run.candidate(key)
    scores = score_candidate(ctx, files, view)
    record: dict[str, Any] = {
        "bank_size": len(view.records),
        "bank_version": view.bank.info().version,
        "gamma": view.gamma,
        "wall_s": round(scores.wall_s, 3),
        "configured_threshold": ctx.config.preference_threshold,
    }
    if not scores.ok:
        # The reward failed on real recorded states: it would fail the same way in training.
        assert scores.error is not None
        error = scores.error
        record.update(
            passed=False,
            discriminating=True,
            category=error.category.value,
            message=error.message,
            steps_saved=steps,
        )
        files.write(PREFERENCE_FILE, record)
        _reject(ctx, summary, error.category.value, f"on the trajectory bank: {error}")
        return summary
    candidate = Scores.from_bank_scores(scores)
    result = assess(
        view.fitness, view.success, candidate, ctx.config.preference_threshold, view.reference
    )
    record.update(asdict(result))
    record["steps_saved"] = 0 if result.passed else steps
    record["hacking"] = bank_signals(
        view.fitness, candidate.returns, candidate.per_step, view.reference.per_step
    )
    record["discounted"] = scores.discounted
    record["returns"] = scores.returns
    record["per_step"] = scores.per_step
    if result.passed:
        files.write(PREFERENCE_FILE, record)
        note = (
            f"preference {result.score:.2f} (bar {result.threshold:.2f})"
            if result.discriminating and result.score is not None
            else "preference: the bank cannot discriminate; passed unchecked"
        )
        ctx.reporter.candidate(key, "accepted", note)
        return summary
    code = files.reward_code()
    text = feedback_text(
        result,
        view.records,
        scores,
        view.sources,
        code,
        ctx.adapter.fitness_description,
        view.gamma,
    )
    files.write(FEEDBACK_FILE, text)
    record["category"] = ErrorCategory.PREFERENCE_REJECTED.value
    record["message"] = result.reason
    files.write(PREFERENCE_FILE, record)
    message = f"{result.reason}; not trained ({steps:,} steps saved)"
    _reject(ctx, summary, ErrorCategory.PREFERENCE_REJECTED.value, message)
    return summary


def preference_check(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Reject, untrained, the candidates whose returns order the bank's recorded episodes
    against their fitness: the cheapest evidence that a reward pays for the wrong thing."""
    ctx = runtime.context
    if not ctx.config.preference_check:
        return {}
    candidates = state.get("candidates", [])
    pending = [c for c in candidates if c.get("status") == CandidateStatus.DESIGNED]
    if not pending:
        return {}
    bank = bank_for(ctx.run.path)
    seed_bank(ctx.adapter, bank, ctx.config.seed, ctx.reporter.message)
    view = BankView.load(bank, learner_gamma(ctx))
    steps = make_job(
        ctx.adapter,
        steps=ctx.config.steps or ctx.adapter.training.loop_steps,
        seed=0,
        algo=ctx.config.algo,
    ).steps
    results = in_parallel(
        ctx, lambda c: check_candidate(ctx, c, view, steps), pending, "preference"
    )
    totals = preference_totals(ctx.run.path)
    ctx.run.update_summary(
        preference=totals, reward_hacking_suspects=hacking_suspects(ctx.run.path)
    )
    rejected = [
        CandidateKey.of(c).label for c in results if c.get("status") == CandidateStatus.REJECTED
    ]
    if rejected:
        ctx.reporter.message(
            f"preference check: {len(rejected)} of {len(pending)} rejected before training "
            f"({', '.join(rejected)}); {totals['steps_saved']:,} training steps saved so far"
        )
    return {"candidates": results}
