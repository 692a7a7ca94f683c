"""A run that ended without any trained candidate: why, in one paragraph, and what to try.

Such a run has no best reward and nothing to evaluate; ending it as a success (exit 0) left users
with an empty result and no reason. The runner raises `NothingTrainedError`, which the CLI prints
as one error line and a non-zero exit; run.json records the run as failed with the same text.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rewardsmith.eureka_loop.state import CandidateStatus, LoopConfig
from rewardsmith.reward.errors import ErrorCategory

_BY = {
    ErrorCategory.PREFERENCE_REJECTED.value: "rejected by the preference check (their returns "
    "ordered the recorded episodes against the task's fitness)",
    ErrorCategory.EXTRACT_ERROR.value: "rejected because the reply held no code",
    "llm_error": "lost because the model gave no reply",
    "critic_rejected": "rejected by the LLM critic",
}


class NothingTrainedError(ValueError):
    """No candidate trained, so the run has no best reward; the message says why."""


def _fate(row: dict[str, Any]) -> str:
    category = row.get("category") or "unknown"
    if row.get("status") == CandidateStatus.FAILED:
        return f"failed in training ({category})"
    if row.get("status") != CandidateStatus.REJECTED:
        return f"left {row.get('status')} (the run stopped first)"
    return _BY.get(category, f"rejected by the critic ({category})")


def explain(
    run_id: str,
    candidates: list[dict[str, Any]],
    stop_reason: str | None,
    config: LoopConfig,
    has_human_reward: bool,
) -> str:
    """One paragraph: how many candidates met which fate, why the run stopped, what to try."""
    fates = Counter(_fate(row) for row in candidates)
    parts = ", ".join(f"{n} {fate}" for fate, n in fates.most_common())
    text = f"run {run_id} ended with no trained candidate, so there is no best reward: " + (
        f"of {len(candidates)} candidates, {parts}" if candidates else "no candidate was designed"
    )
    text += f"; the run stopped: {stop_reason or 'unknown'}."
    tries = []
    if any(row.get("category") == ErrorCategory.PREFERENCE_REJECTED.value for row in candidates):
        tries.append("`--no-preference-check` to train candidates the check rejects")
    if config.task_file and not has_human_reward:
        tries.append(
            "a `human_reward` file in the task file (docs/task_files.md), which the loop "
            "starts from"
        )
    tries.append(
        f"more samples or rounds (`--samples {max(2 * config.samples, 4)}`, "
        f"`--rounds {config.rounds + 2}`)"
    )
    if config.model:
        tries.append("`--feedback` with what the rewards should pay for")
    text += " Try " + "; or ".join(tries) + ". `rewardsmith show " + run_id + "` lists every fate."
    return text
