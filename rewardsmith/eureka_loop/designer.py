"""The Reward Designer node: prompts a designer for K candidates and stores every reply first."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from rewardsmith.eureka_loop.extract import ExtractError, extract_code
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.llm import (
    BudgetExceededError,
    LLMCall,
    LLMUnavailableError,
    prompt_hash,
)
from rewardsmith.eureka_loop.replies import reply_record, save_call
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateStatus,
    CandidateSummary,
    Context,
    LoopState,
)
from rewardsmith.prompts import render
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.runs import layout
from rewardsmith.runs.judgements import feedback_for_design
from rewardsmith.runs.schema import embedded_record

Message = dict[str, str]


@dataclass
class Proposal:
    """One designer reply, before extraction; `call` is the LLM call record (None offline)."""

    reply: str
    call: dict[str, Any] | None = None
    error: str | None = None


class Designer(Protocol):
    """Where a round's candidate rewards come from: an LLM, a source run's replies (a rerun), or
    the offline search; `name` says which at the start of the run."""

    name: str

    def propose(
        self, ctx: Context, state: LoopState, messages: list[Message], keys: list[str]
    ) -> list[Proposal]:
        """One proposal per key, in order; each key names the reply saved in the run, so a resumed
        round reuses it. A failed call is a proposal with `error`; `BudgetExceededError` raised
        here ends the run at this round."""
        ...


def action_description(space: gym.Space) -> str:
    """What the system prompt says `action` is: its dtype, shape and range, so the reward indexes
    it correctly. The text is part of the prompt hash that replays compare."""
    if isinstance(space, gym.spaces.Discrete):
        return f"integer array of shape [N] with values 0..{int(space.n) - 1}"
    if isinstance(space, gym.spaces.Box):
        return (
            f"float array of shape [N, {space.shape[0]}] with values in "
            f"[{float(space.low.min()):g}, {float(space.high.max()):g}]"
        )
    return f"array of actions from {space}"


def build_messages(ctx: Context, state: LoopState) -> list[Message]:
    """System + task, plus the best code and its reflection after round 0 (context never grows)."""
    adapter, config = ctx.adapter, ctx.config
    described = adapter.describe()
    env = adapter.make_env()
    system = render(
        "designer_system",
        algo=config.algo or adapter.training.algo,
        backend=config.backend,
        fitness=adapter.fitness_description,
        action_description=action_description(env.action_space),
    )
    env.close()
    user = render(
        "designer_task",
        goal=adapter.goal,
        fields=described["fields"],
        feedback=config.feedback,
        # What a person wrote after judging the last round's videos, and `rewardsmith feedback`.
        human_feedback=feedback_for_design(ctx.run.path, state.get("round", 0)),
    )
    best = state.get("best")
    if best is not None:
        user += "\n" + (ctx.run.candidate(CandidateKey.of(best)).text(layout.REFLECTION) or "")
    failures = [
        {"category": c.get("category"), "message": c.get("message"), "traceback": None}
        for c in state.get("candidates", [])
        if c.get("status") in (CandidateStatus.REJECTED, CandidateStatus.FAILED)
    ][:4]
    failures += _hacking_suspects(ctx, state)
    errors = render("execution_error", failures=failures)
    if errors.strip():
        user += "\n" + errors
    for text in _preference_feedback(ctx, state):
        user += "\n" + text
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _preference_feedback(ctx: Context, state: LoopState, limit: int = 2) -> list[str]:
    """The mis-ranked pairs of the last attempt's preference rejections (a few, to bound the prompt)."""
    texts = []
    for c in state.get("candidates", []):
        if c.get("category") != ErrorCategory.PREFERENCE_REJECTED.value:
            continue
        text = ctx.run.candidate(CandidateKey.of(c)).text(layout.PREFERENCE_FEEDBACK)
        if text is not None:
            texts.append(text)
        if len(texts) == limit:
            break
    return texts


def _hacking_suspects(ctx: Context, state: LoopState) -> list[dict[str, Any]]:
    """Trained candidates of the last attempt flagged as likely reward hacking (the best one's
    flag already travels in its reflection)."""
    best = state.get("best")
    best_key = CandidateKey.of(best) if best else None
    suspects = []
    for c in state.get("candidates", []):
        key = CandidateKey.of(c)
        if c.get("status") != CandidateStatus.TRAINED or key == best_key:
            continue
        hacking = ctx.run.candidate(key).hacking()
        if hacking.get("suspect"):
            message = f"candidate {key.label}: " + "; ".join(hacking.get("reasons", []))
            suspects.append(
                {"category": hacking.get("flag"), "message": message, "traceback": None}
            )
    return suspects[:2]


class LLMDesigner:
    """Samples K replies concurrently; each reply is written to the run before it is used."""

    def __init__(self, model: str) -> None:
        self.name = model

    def propose(
        self, ctx: Context, state: LoopState, messages: list[Message], keys: list[str]
    ) -> list[Proposal]:
        """All K calls at once, one thread each. A reply saved under the key for the same prompt
        is reused; a call that failed is saved too, so the run shows why that slot is empty."""
        assert ctx.llm is not None
        digest = prompt_hash(messages)
        round_ = state.get("round", 0)

        def one(key: str) -> Proposal:
            try:
                record = reply_record(ctx, key, messages, round_, "design")
            except LLMUnavailableError as exc:  # kept, so the run shows why the slot is empty
                failed = exc.call or LLMCall(
                    prompt_hash=digest, model=self.name, messages=messages, error=str(exc)
                )
                record = save_call(ctx, key, round_, "design", failed)
            return Proposal(record.get("reply", ""), record, record.get("error"))

        return in_parallel(ctx, one, keys, "design", workers=len(keys))


def design(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Ask the designer for K candidates; extraction failures are rejected here, untrained."""
    ctx = runtime.context
    round_, attempt = state.get("round", 0), state.get("attempt", 0)
    ctx.reporter.round_started(round_, attempt)
    messages = build_messages(ctx, state)
    ctx.run.write_round_file(
        round_,
        layout.round_file(layout.ROUND_PROMPT, attempt),
        {"messages": messages, "prompt_hash": prompt_hash(messages)},
    )
    k = ctx.config.samples
    # Each retry of a round gets its own candidate slots, so nothing earlier is overwritten.
    indices = list(range(attempt * k, (attempt + 1) * k))
    keys = [f"r{round_:02d}-design-{CandidateKey(round_, i).label}" for i in indices]
    try:
        proposals = ctx.designer.propose(ctx, state, messages, keys)
    except BudgetExceededError as exc:
        ctx.reporter.message(f"budget reached: {exc}")
        return {"candidates": Overwrite([]), "stop_reason": f"budget: {exc}"}
    best = state.get("best")
    parent = CandidateKey.of(best).label if best else None
    candidates: list[CandidateSummary] = []
    for idx, proposal in zip(indices, proposals, strict=True):
        key = CandidateKey(round_, idx)
        folder = ctx.run.candidate(key)
        folder.write(layout.PROMPT, {"messages": messages, "prompt_hash": prompt_hash(messages)})
        folder.write(layout.RESPONSE, proposal.reply)
        if proposal.call and "genome" in proposal.call:
            folder.write(layout.GENOME, embedded_record(proposal.call["genome"]))
        summary: CandidateSummary = {
            "round": key.round,
            "idx": key.idx,
            "status": CandidateStatus.DESIGNED.value,
            "parent": parent,
            "warnings": [],
        }
        if proposal.error:
            summary.update(
                {
                    "status": CandidateStatus.REJECTED.value,
                    "category": "llm_error",
                    "message": proposal.error,
                }
            )
        else:
            try:
                code = extract_code(proposal.reply)
                folder.write(layout.REWARD, code)
            except ExtractError as exc:
                summary.update(
                    {
                        "status": CandidateStatus.REJECTED.value,
                        "category": ErrorCategory.EXTRACT_ERROR.value,
                        "message": str(exc),
                    }
                )
        ctx.run.upsert_candidate(
            key.round,
            key.idx,
            status=summary["status"],
            category=summary.get("category"),
            message=summary.get("message"),
            parent=parent,
        )
        ctx.reporter.candidate(key, summary["status"], summary.get("message") or "")
        candidates.append(summary)
    return {"candidates": Overwrite(candidates), "stop_reason": None}
