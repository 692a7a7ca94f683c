"""The Reward Critic node: rejects broken code before any training is spent on it.

Static checks (parse, signature, imports) run here; the smoke test calls the reward on recorded
states inside the sandbox; the optional LLM review checks the code against the task goal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from rewardsmith.choices import Backend
from rewardsmith.eureka_loop.baseline import is_env_reward
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.hacking import FLAG, outcome_field_reason, outcome_fields_read
from rewardsmith.eureka_loop.llm import LLMUnavailableError
from rewardsmith.eureka_loop.replies import reply_record
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateStatus,
    CandidateSummary,
    Context,
    LoopState,
    mark,
)
from rewardsmith.prompts import render
from rewardsmith.reward.errors import RewardError
from rewardsmith.reward.static import check_source
from rewardsmith.runs import layout
from rewardsmith.sandbox.types import Limits

SMOKE_LIMITS = Limits(wall_s=60.0, memory_mb=2048)
TRACE_LIMITS = Limits(wall_s=300.0, memory_mb=4096)


def _jax_check(ctx: Context, code: str, cand_dir: Path) -> None:
    """On the jax backend: the reward under numpy and under jax.numpy, on the same recorded
    states, must agree; code that cannot trace is a `jax_incompatible` error (in the sandbox)."""
    from rewardsmith.jobs.trace_jax import trace_reward

    work_dir = cand_dir / layout.TRACE_DIR
    report = trace_reward(
        ctx.adapter.id,
        code,
        work_dir,
        ctx.states_path,
        ctx.sandbox,
        TRACE_LIMITS,
        layout.program_log(work_dir, "trace"),
    )
    if report.error is not None:
        raise report.error


def _review_with_llm(ctx: Context, summary: CandidateSummary, code: str) -> str | None:
    """Ask the model whether the code fits the goal; returns the rejection reason, if any."""
    messages = [
        {
            "role": "user",
            "content": render(
                "critic_review",
                goal=ctx.adapter.goal,
                fields=ctx.adapter.describe()["fields"],
                code=code,
            ),
        }
    ]
    cand = CandidateKey.of(summary)
    key = f"r{cand.round:02d}-critic-{cand.label}"
    try:
        reply = str(reply_record(ctx, key, messages, cand.round, "critic").get("reply", ""))
    except LLMUnavailableError:
        return None  # the review is advisory: an unavailable model does not block a candidate
    ctx.run.candidate(cand).write(layout.CRITIC_REVIEW, reply)
    first = reply.strip().splitlines()[0].upper() if reply.strip() else ""
    if "REJECT" in first:
        reasons = " ".join(line.strip() for line in reply.strip().splitlines()[1:4])
        return reasons or "the reviewer rejected the reward"
    return None


def _critique_one(ctx: Context, summary: CandidateSummary) -> CandidateSummary:
    from rewardsmith.jobs.smoke import smoke_test

    summary = dict(summary)  # type: ignore[assignment]
    key = CandidateKey.of(summary)
    folder = ctx.run.candidate(key)
    code = folder.reward_code()
    if is_env_reward(code):  # the environment's own reward: no code to check
        folder.write(layout.CRITIQUE, {"ok": True, "warnings": [], "env_reward": True})
        ctx.reporter.candidate(key, "accepted", "the environment's own reward")
        return summary
    verdict: dict[str, Any] = {"ok": True, "warnings": []}
    try:
        check_source(code)
        report = smoke_test(
            ctx.adapter,
            code,
            folder.path / layout.SMOKE_DIR,
            ctx.states_path,
            ctx.sandbox,
            SMOKE_LIMITS,
            on_poll=ctx.raise_if_cancelled,
        )
        verdict["warnings"] = list(report.warnings)
        verdict["outcome_fields"] = outcome_fields_read(
            ctx.adapter.schema, code, ctx.adapter.reward_source("human")
        )
        if verdict["outcome_fields"]:
            verdict["warnings"].append(f"{FLAG}: {outcome_field_reason(verdict['outcome_fields'])}")
        verdict["calls_per_s"] = report.calls_per_s
        if report.error is not None:
            raise report.error
        if ctx.config.backend == Backend.JAX:
            _jax_check(ctx, code, folder.path)
        if ctx.config.critic_llm:
            reason = _review_with_llm(ctx, summary, code)
            if reason is not None:
                verdict.update(ok=False, category="critic_rejected", message=reason)
    except RewardError as error:
        verdict.update(ok=False, **error.to_dict())
    folder.write(layout.CRITIQUE, verdict)
    summary["warnings"] = verdict["warnings"]
    if not verdict["ok"]:
        category, message = verdict["category"], verdict["message"]
        detail = f"{category}: {message}"
        mark(ctx, summary, CandidateStatus.REJECTED, detail, category=category, message=message)
    else:
        ctx.reporter.candidate(key, "accepted", "; ".join(verdict["warnings"]))
    return summary


def critique(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Check every designed candidate before any compute is spent on it: static checks, the
    sandboxed smoke test on recorded states, the JAX trace where that backend trains, and the
    optional LLM review; a rejected candidate carries its named error to the designer."""
    ctx = runtime.context
    candidates = state.get("candidates", [])
    pending = [c for c in candidates if c.get("status") == CandidateStatus.DESIGNED]
    results = in_parallel(ctx, lambda c: _critique_one(ctx, c), pending, "critic")
    return {"candidates": results}
