"""The train node: each surviving candidate trains in its own sandboxed worker, in parallel."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.baseline import training_source
from rewardsmith.eureka_loop.state import CandidateSummary, Context, LoopState
from rewardsmith.runs.atomic import write_json
from rewardsmith.sandbox.executor import Limits
from rewardsmith.sandbox.training import TrainOutcome, make_job, train_reward

OUTCOME_FILE = "outcome.json"


class Cancelled(Exception):
    """Raised from a progress callback to stop a sandboxed job (its process group is killed)."""


def run_job(
    ctx: Context, cand_dir: Path, round_: int, idx: int, reward_source: str | None, seed: int
) -> dict[str, Any]:
    """Train one reward, or reuse its finished outcome after a resume; returns the outcome dict.

    `round_`/`idx` only label progress reports (the final evaluation uses round -1).
    """
    outcome_path = cand_dir / OUTCOME_FILE
    if outcome_path.exists():
        stored = dict(json.loads(outcome_path.read_text()))
        # An outcome of the other backend (`evaluate --backend`) is retrained, not reused.
        if stored.get("backend", "sb3") == ctx.config.backend:
            return stored
    job = make_job(
        ctx.adapter,
        steps=ctx.config.steps,
        seed=seed,
        algo=ctx.config.algo,
        backend=ctx.config.backend,
        search=True,
    )

    def progress(done: int, total: int) -> None:
        if ctx.cancel.is_set():
            raise Cancelled()
        ctx.reporter.progress(round_, idx, done, total)

    limits = Limits(wall_s=ctx.config.train_timeout_s)
    outcome: TrainOutcome = (
        ctx.executor.train(ctx.adapter, job, reward_source, cand_dir, limits, progress)
        if ctx.executor is not None
        else train_reward(ctx.adapter, job, reward_source, cand_dir, ctx.sandbox, limits, progress)
    )
    record = {**outcome.to_dict(), "backend": job.backend}
    write_json(outcome_path, record)
    return record


def _train_one(ctx: Context, summary: CandidateSummary) -> CandidateSummary:
    summary = dict(summary)  # type: ignore[assignment]
    round_, idx = summary["round"], summary["idx"]
    ctx.reporter.candidate(round_, idx, "training")
    cand_dir = ctx.run.candidate_dir(round_, idx)
    code = (cand_dir / "reward.py").read_text()
    seed = ctx.config.seed + round_ * 1000 + idx
    outcome = run_job(ctx, cand_dir, round_, idx, training_source(code), seed)
    if outcome["ok"]:
        summary.update(
            {
                "status": "trained",
                "fitness": outcome["fitness"],
                "success_rate": outcome["success_rate"],
            }
        )
        ctx.run.upsert_candidate(
            round_,
            idx,
            status="trained",
            fitness=outcome["fitness"],
            success_rate=outcome["success_rate"],
        )
        ctx.reporter.candidate(round_, idx, "trained", f"fitness {outcome['fitness']:.4g}")
    else:
        error = outcome["error"]
        summary.update(
            {"status": "failed", "category": error["category"], "message": error["message"]}
        )
        ctx.run.upsert_candidate(
            round_, idx, status="failed", category=error["category"], message=error["message"]
        )
        ctx.reporter.candidate(round_, idx, "failed", f"{error['category']}: {error['message']}")
    return summary


def train(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    candidates = state.get("candidates", [])
    pending = [c for c in candidates if c.get("status") == "designed"]
    done: dict[tuple[int, int], CandidateSummary] = {}
    with ThreadPoolExecutor(
        max_workers=max(1, ctx.config.parallel), thread_name_prefix="train"
    ) as pool:
        futures = [pool.submit(_train_one, ctx, c) for c in pending]
        try:
            for future in futures:
                result = future.result()
                done[(result["round"], result["idx"])] = result
        except BaseException:
            ctx.cancel.set()  # Ctrl-C or a failure: stop every sandbox still running
            for future in futures:
                future.cancel()  # and start no new one
            raise
    return {"candidates": [done.get((c["round"], c["idx"]), c) for c in candidates]}
