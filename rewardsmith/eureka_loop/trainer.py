"""The train node: each surviving candidate trains in its own sandboxed worker, in parallel,
for the full budget or in successive-halving rungs (`halving`)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.baseline import training_source
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.halving import Rung, on_rollout, rungs, survivors, unsupported
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateStatus,
    CandidateSummary,
    Context,
    LoopState,
    mark,
    search_seed,
    training_job,
)
from rewardsmith.eureka_loop.videos import film_trained
from rewardsmith.jobs.records import read_training_state
from rewardsmith.jobs.training import TrainOutcome, make_job, train_reward
from rewardsmith.runs.atomic import write_bytes
from rewardsmith.runs.candidate import TrainingFiles
from rewardsmith.sandbox.types import Limits

if TYPE_CHECKING:
    from rewardsmith.eureka_loop.evaluation import EvalKey


def train_in(
    ctx: Context,
    folder: TrainingFiles,
    key: CandidateKey | EvalKey,
    reward_source: str | None,
    seed: int,
    rung: Rung | None = None,
) -> dict[str, Any]:
    """Train one reward, or reuse its finished outcome after a resume; returns the outcome dict.

    `key` only labels progress reports (the final evaluation's is an `EvalKey`). With a
    `rung` (the halving schedule) the training stops at that rung's steps, continuing from the
    state the previous rung saved; the rung's outcome is kept as `rung_R.json`.
    """
    stored = folder.outcome() if rung is None else folder.rung_outcome(rung.index)
    # An outcome of the other backend (`evaluate --backend`) is retrained, not reused.
    if stored is not None and stored.get("backend", "sb3") == ctx.config.backend:
        return stored
    job = training_job(ctx, seed)
    earlier: dict[str, Any] | None = None
    resume: dict[str, bytes] | None = None
    if rung is not None:
        stop_at = on_rollout(min(rung.steps, job.steps), job.rollout_steps)
        job.stop_at = stop_at if not rung.last and stop_at < job.steps else None
        if rung.index > 0:
            # The last rung it trained: a sole survivor skips the rungs between to the last.
            for index in reversed(range(rung.index)):
                earlier = folder.rung_outcome(index)
                if earlier is not None:
                    break
            else:
                raise FileNotFoundError(f"no earlier rung of {folder.path} left an outcome")
            job.start_steps = int(earlier["steps"])
            resume = _read_saved_state(folder.rung_state_dir(index))

    def progress(done: int, total: int) -> None:
        ctx.raise_if_cancelled()
        ctx.reporter.progress(key, done, total)

    limits = Limits(wall_s=ctx.config.train_timeout_s)
    folder.path.mkdir(parents=True, exist_ok=True)
    outcome: TrainOutcome = (
        ctx.executor.train(ctx.adapter, job, reward_source, folder.path, limits, progress, resume)
        if ctx.executor is not None
        else train_reward(
            ctx.adapter, job, reward_source, folder.path, ctx.sandbox, limits, progress, resume
        )
    )
    record = {**outcome.to_dict(), "backend": job.backend}
    if rung is not None:
        record["rung"], record["rungs"] = rung.index, rung.count
        if earlier is not None:  # the reflection log of the whole training so far
            record["checkpoints"] = [*earlier["checkpoints"], *record["checkpoints"]]
            record["wall_s"] += earlier["wall_s"]
        if outcome.ok and not rung.last:
            _save_state(folder, rung.index)
        folder.write_rung_outcome(rung.index, record)
    else:
        folder.write_outcome(record)
    return record


def _save_state(folder: TrainingFiles, index: int) -> None:
    """Keep what the next rung continues from, out of the job folder the next rung replaces
    (read as any worker file: no link followed, size capped)."""
    state_dir = folder.rung_state_dir(index)
    state_dir.mkdir(exist_ok=True)
    for name, data in read_training_state(folder.job_dir).items():
        write_bytes(state_dir / name, data)


def _read_saved_state(state_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(state_dir.iterdir())}


def _apply(ctx: Context, summary: CandidateSummary, outcome: dict[str, Any]) -> CandidateSummary:
    """The candidate's summary and index row after its training."""
    summary = dict(summary)  # type: ignore[assignment]
    summary["steps"] = outcome.get("steps")
    stopped = outcome.get("rung") is not None and outcome["rung"] < outcome["rungs"] - 1
    summary["stopped_at_rung"] = outcome["rung"] if stopped else None
    row = {"steps": outcome.get("steps"), "rung": summary["stopped_at_rung"]}
    if outcome["ok"]:
        detail = f"fitness {outcome['fitness']:.4g}"
        if stopped:
            detail += f"; stopped at rung {outcome['rung'] + 1} of {outcome['rungs']}"
        detail += f" ({outcome.get('steps')} steps)"
        fit = {"fitness": outcome["fitness"], "success_rate": outcome["success_rate"]}
        mark(ctx, summary, CandidateStatus.TRAINED, detail, row, **fit)
    else:
        category, message = outcome["error"]["category"], outcome["error"]["message"]
        detail = f"{category}: {message}"
        mark(ctx, summary, CandidateStatus.FAILED, detail, row, category=category, message=message)
    return summary


def _train_to(ctx: Context, summary: CandidateSummary, rung: Rung | None) -> dict[str, Any]:
    key = CandidateKey.of(summary)
    if rung is None or rung.index == 0:
        ctx.reporter.candidate(key, "training")
    files = ctx.run.candidate(key)
    seed = search_seed(ctx.config, key)
    return train_in(ctx, files, key, training_source(files.reward_code()), seed, rung)


def _train_rung(
    ctx: Context, pending: list[CandidateSummary], rung: Rung, i: int
) -> dict[str, Any]:
    return _train_to(ctx, pending[i], rung)


def _by_halving(ctx: Context, pending: list[CandidateSummary]) -> list[dict[str, Any]]:
    """Successive halving over the round's candidates; each one's last outcome, in order."""
    job_steps = make_job(ctx.adapter, steps=ctx.config.steps, seed=0, search=True).steps
    final: dict[int, dict[str, Any]] = {}
    alive = list(range(len(pending)))
    for rung in rungs(job_steps, len(pending)):
        if len(alive) == 1 and not rung.last:
            continue  # nothing left to rank: the sole survivor goes on to the full budget
        results = in_parallel(
            ctx, functools.partial(_train_rung, ctx, pending, rung), alive, "train"
        )
        outcomes = dict(zip(alive, results, strict=True))
        final.update(outcomes)
        if rung.last:
            break
        fit = [i for i in alive if outcomes[i]["ok"] and outcomes[i]["fitness"] is not None]
        fit.sort(key=lambda i: -float(outcomes[i]["fitness"]))  # stable: earlier keeps ties
        alive = sorted(fit[: survivors(len(fit))])
        for i in set(outcomes) - set(alive):
            _finish(ctx, pending[i], outcomes[i])
        if not alive:
            break
    for i in alive:
        _finish(ctx, pending[i], final[i])
    return [final[i] for i in range(len(pending))]


def _finish(ctx: Context, summary: CandidateSummary, outcome: dict[str, Any]) -> None:
    """The candidate's training is over: its last rung's outcome is its outcome."""
    files = ctx.run.candidate(CandidateKey.of(summary))
    if files.outcome() is None:
        files.write_outcome(outcome)


def train(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Train every candidate the checks let through, each in its own sandboxed worker."""
    ctx = runtime.context
    candidates = state.get("candidates", [])
    pending = [c for c in candidates if c.get("status") == CandidateStatus.DESIGNED]
    schedule = ctx.config.schedule
    why_not = unsupported(ctx.config.backend, ctx.config.algo or ctx.adapter.training.algo)
    if schedule == "halving" and why_not is not None:
        ctx.reporter.message(f"schedule full: {why_not}")
    if schedule == "halving" and why_not is None and len(pending) > 1:
        outcomes = _by_halving(ctx, pending)
    else:
        outcomes = in_parallel(ctx, lambda c: _train_to(ctx, c, None), pending, "train")
    updated = [_apply(ctx, c, o) for c, o in zip(pending, outcomes, strict=True)]
    film_trained(ctx, updated)
    return {"candidates": updated}
