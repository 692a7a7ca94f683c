"""One way for a node to get a model's reply: the reply the run saved for the same prompt, or a
new call whose record is saved (and its spend logged) before the node uses it, so a resumed run
never pays for a call twice. The designer, the critic's review and the analyzer's summary all go
through here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardsmith.eureka_loop.llm import LLMCall, LLMUnavailableError, Message, prompt_hash
from rewardsmith.eureka_loop.state import Context


def reply_record(
    ctx: Context, key: str, messages: Sequence[Message], round_: int, purpose: str
) -> dict[str, Any]:
    """The record of the reply to `messages` saved under `key`, or of a new call.

    Raises what `ChatModel.complete` raises (`LLMUnavailableError`, `BudgetExceededError`),
    and `LLMUnavailableError` when the run has no model at all.
    """
    cached = ctx.run.load_reply(key)
    if cached is not None and cached.get("prompt_hash") == prompt_hash(messages):
        return cached
    if ctx.llm is None:
        raise LLMUnavailableError(f"no model is configured for the {purpose} call")
    return save_call(ctx, key, round_, purpose, ctx.llm.complete(messages))


def save_call(ctx: Context, key: str, round_: int, purpose: str, call: LLMCall) -> dict[str, Any]:
    """Keep a call's record in the run (a failed one too, so its error is shown and reused)."""
    record = call.to_dict()
    path = ctx.run.save_reply(key, record)
    ctx.run.record_llm_call(round_, purpose, record, path)
    if ctx.budget is not None:
        ctx.reporter.spend(ctx.budget.tokens, ctx.budget.usd)
    return record
