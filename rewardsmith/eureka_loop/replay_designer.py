"""A designer that serves a finished run's recorded replies, to re-execute the run with no LLM.

`replay --rerun` builds every prompt afresh from the installed templates and the new run's own
training results, then asks this designer for candidates. It serves the reply the source run
stored under the same key (`r01-design-r01c02`), whatever the prompt, and records whether the
prompt hashes the same as the one the source run sent: a differing hash means a template, a task
description or an upstream result changed. Offline-designer runs store their replies (genome and
code) the same way, so they replay alike.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.eureka_loop.designer import Message, Proposal
from rewardsmith.eureka_loop.llm import (
    BudgetExceededError,
    LLMCall,
    LLMUnavailableError,
    prompt_hash,
)
from rewardsmith.eureka_loop.state import Context, LoopState
from rewardsmith.runs import layout
from rewardsmith.runs.candidate import CandidateFiles, CandidateKey
from rewardsmith.runs.schema import read_record
from rewardsmith.runs.store import Run

_DESIGN_KEY = re.compile(r"r(\d+)-design-r(\d+)c(\d+)")
_DIFF_LINES = 12


class ReplayDivergedError(RuntimeError):
    """The rerun asked for a reply the source run never recorded, so it cannot go on."""


@dataclass
class PromptCheck:
    """Whether one rebuilt prompt hashes the same as the prompt the source run recorded."""

    key: str
    recorded_hash: str | None
    replayed_hash: str
    where: str | None = None
    """Where the prompts first differ, in words; None when they match."""
    diff: list[str] = field(default_factory=list)
    """A few unified-diff lines around the first difference."""

    @property
    def matches(self) -> bool:
        """False also when the source run recorded no prompt for the key (`recorded_hash` None)."""
        return self.recorded_hash == self.replayed_hash

    def to_dict(self) -> dict[str, Any]:
        """The check as `replay.json` and `replay --json` show it, `matches` included."""
        return {
            "key": self.key,
            "matches": self.matches,
            "recorded_hash": self.recorded_hash,
            "replayed_hash": self.replayed_hash,
            "where": self.where,
            "diff": self.diff,
        }


class ReplayDesigner:
    """Serves the source run's stored design replies by key; never calls a model."""

    def __init__(self, source: Run) -> None:
        self.source = source
        self.name = (
            f"replay of {source.run_id} ({source.info()['model']}; recorded replies, no LLM)"
        )
        self.checks: list[PromptCheck] = []
        self._lock = threading.Lock()

    def propose(
        self, ctx: Context, state: LoopState, messages: list[Message], keys: list[str]
    ) -> list[Proposal]:
        """The source's reply for each key, whatever the prompt, and a prompt check for each.
        A key with no reply raises `BudgetExceededError` where the source run ran out of budget
        too, `ReplayDivergedError` otherwise; a served reply's spend counts against the budget."""
        proposals = []
        for key in keys:
            record = self.source.load_reply(key)
            self.record(compare_prompts(key, self._recorded_prompt(key, record), messages))
            if record is None:
                if ctx.budget is not None and (reason := ctx.budget.exceeded()):
                    raise BudgetExceededError(reason)  # where the source run stopped, too
                status = self.source.status()
                why = (
                    "the rerun went somewhere the source run never did (see the fitness comparison)"
                    if status == "finished"
                    else f"the source run is {status} and never got this far"
                )
                raise ReplayDivergedError(
                    f"the source run {self.source.run_id} has no reply for {key}: {why}"
                )
            ctx.run.save_reply(key, record)  # the rerun's directory is complete on its own
            if ctx.budget is not None and "prompt_hash" in record:
                ctx.budget.record(LLMCall.from_dict(record))  # so budget stops happen alike
            proposals.append(Proposal(record.get("reply", ""), record, record.get("error")))
        return proposals

    def _recorded_prompt(self, key: str, record: dict[str, Any] | None) -> dict[str, Any] | None:
        """The prompt the source sent for `key`: the candidate's prompt.json, else the reply's."""
        match = _DESIGN_KEY.fullmatch(key)
        if match:
            files = CandidateFiles(self.source.path, CandidateKey(int(match[2]), int(match[3])))
            prompt = files.record(layout.PROMPT)
            if prompt is not None:
                return prompt
        if record is not None and "prompt_hash" in record:
            return {"messages": record.get("messages", []), "prompt_hash": record["prompt_hash"]}
        return None

    def record(self, check: PromptCheck) -> None:
        """Keep a prompt check (called from the loop's worker threads)."""
        with self._lock:
            self.checks.append(check)


class ReplayLLM:
    """Stands in for the LLM client of the other nodes (critic review, analyzer summary) in a rerun.

    Answers a prompt with the source run's recorded reply to the same prompt (by hash), at no cost.
    A prompt the source never sent is reported as unavailable, which those advisory calls skip.
    """

    def __init__(self, source: Run, record: Callable[[PromptCheck], None]) -> None:
        self.record = record
        self._replies: dict[str, tuple[str, dict[str, Any]]] = {}
        for path in sorted(source.llm_dir.glob("*.json")):
            if _DESIGN_KEY.fullmatch(path.stem):
                continue  # design replies are served by key, by the ReplayDesigner
            reply = read_record(path)
            if "prompt_hash" in reply:
                self._replies[reply["prompt_hash"]] = (path.stem, reply)

    def complete(self, messages: Sequence[Message], *, check_budget: bool = True) -> LLMCall:
        """The source's reply to the same prompt, at zero cost and with no budget check; a prompt
        it never sent raises `LLMUnavailableError` and is recorded as a mismatch."""
        digest = prompt_hash(messages)
        found = self._replies.get(digest)
        if found is None:
            self.record(
                PromptCheck(
                    "an LLM call the source run never made (critic review or analyzer summary)",
                    None,
                    digest,
                    "the source run recorded no such prompt",
                )
            )
            raise LLMUnavailableError("the source run recorded no reply to this prompt")
        key, record = found
        self.record(PromptCheck(key, digest, digest))
        call = LLMCall.from_dict(record)
        call.prompt_tokens = call.completion_tokens = 0
        call.cost_usd, call.latency_s, call.attempts = 0.0, 0.0, 0
        return call


def compare_prompts(
    key: str, recorded: dict[str, Any] | None, messages: Sequence[Message]
) -> PromptCheck:
    """A `PromptCheck` for one prompt, saying where it first departs from the recorded one."""
    digest = prompt_hash(messages)
    if recorded is None:
        return PromptCheck(key, None, digest, "the source run recorded no prompt for it")
    check = PromptCheck(key, recorded.get("prompt_hash"), digest)
    if check.matches:
        return check
    old: list[Message] = list(recorded.get("messages", []))
    new = list(messages)
    for i in range(max(len(old), len(new))):
        if i >= len(old) or i >= len(new):
            check.where = f"the recorded prompt has {len(old)} messages, the rebuilt one {len(new)}"
            return check
        if old[i] == new[i]:
            continue
        role = new[i].get("role", "?")
        if old[i].get("role") != role:
            check.where = f"message {i + 1}: role {old[i].get('role')!r} became {role!r}"
            return check
        before = str(old[i].get("content", "")).splitlines()
        after = str(new[i].get("content", "")).splitlines()
        line = next(
            (n for n, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
            min(len(before), len(after)),
        )
        check.where = f"message {i + 1} ({role}), line {line + 1}"
        diff = difflib.unified_diff(before, after, "recorded", "rebuilt", n=1, lineterm="")
        check.diff = list(diff)[:_DIFF_LINES]
        return check
    check.where = "the messages are equal but hash differently (a non-text field changed)"
    return check
