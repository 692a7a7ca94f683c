"""Graph state (ids and summaries only, checkpointed after every node) and the run context."""

from __future__ import annotations

import operator
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

# Re-exported: the nodes name candidates and their statuses as the run store does.
from rewardsmith.runs.candidate import CandidateKey as CandidateKey
from rewardsmith.runs.candidate import CandidateStatus as CandidateStatus

if TYPE_CHECKING:
    from rewardsmith.cluster.executors import Executor
    from rewardsmith.envs.adapter import TaskAdapter
    from rewardsmith.eureka_loop.designer import Designer
    from rewardsmith.eureka_loop.llm import Budget, ChatModel
    from rewardsmith.eureka_loop.reporter import Reporter
    from rewardsmith.job_spec import TrainJob
    from rewardsmith.runs.store import Run
    from rewardsmith.sandbox.types import Sandbox


# Re-exported: the config lives in its own module, with the options it declares.
from rewardsmith.eureka_loop.config import (
    DEFAULT_PREFERENCE_THRESHOLD as DEFAULT_PREFERENCE_THRESHOLD,
)
from rewardsmith.eureka_loop.config import LoopConfig as LoopConfig
from rewardsmith.eureka_loop.config import default_parallel as default_parallel


class CandidateSummary(TypedDict, total=False):
    """One candidate as the graph sees it; code, logs and arrays stay in the run store."""

    round: int
    idx: int
    status: str  # designed | rejected | trained | failed
    category: str | None
    message: str | None
    fitness: float | None
    success_rate: float | None
    parent: str | None
    warnings: list[str]
    steps: int | None  # training steps it got
    stopped_at_rung: int | None  # halving: the rung (from 0) after which it stopped early
    confirm_fitness: float | None  # confirm_best: the second seed's fitness (None: it failed)


def merge_candidates(
    current: list[CandidateSummary], changed: list[CandidateSummary]
) -> list[CandidateSummary]:
    """The `candidates` channel's reducer: a node returns only the candidates it changed, and each
    replaces the one with its key (round, idx) where it stands; an unknown key is appended.
    `design` starts a round's list with `langgraph.types.Overwrite`, which bypasses this."""
    by_key = {CandidateKey.of(c): c for c in changed}
    merged = [by_key.pop(CandidateKey.of(c), c) for c in current]
    return merged + list(by_key.values())


class LoopState(TypedDict, total=False):
    """What the checkpointer keeps after every node: small summaries, so a resumed run restores
    in milliseconds; `history` grows by one entry per round and `candidates` merges by key."""

    round: int
    attempt: int
    candidates: Annotated[list[CandidateSummary], merge_candidates]
    best: CandidateSummary | None
    history: Annotated[list[dict[str, Any]], operator.add]
    stop_reason: str | None
    evaluation: dict[str, Any] | None


class Cancelled(Exception):
    """Raised while polling a sandboxed program once the run is stopping (its group is killed)."""


@dataclass
class Context:
    """Live objects for the nodes: not checkpointed, rebuilt by `resume` from run.json."""

    run: Run
    adapter: TaskAdapter
    config: LoopConfig
    designer: Designer
    sandbox: Sandbox
    reporter: Reporter
    states_path: Path
    llm: ChatModel | None = None
    budget: Budget | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    executor: Executor | None = None  # None: train here, in `sandbox`
    video_reasons_told: set[str] = field(default_factory=set)  # why no video, said once each
    judge_llm: ChatModel | None = None  # `--judge vlm`: the vision model; None: no judging

    def raise_if_cancelled(self) -> None:
        """The poll every sandboxed program of the loop runs with: Ctrl-C, SIGTERM or a failed
        sibling (`fanout.in_parallel` sets `cancel`) stops it within one poll."""
        if self.cancel.is_set():
            raise Cancelled()


def training_job(ctx: Context, seed: int) -> TrainJob:
    """The job a reward of this run trains with `seed`: the task's defaults with the run's steps,
    learner and backend (also what rebuilds a trained policy to film it)."""
    from rewardsmith.jobs.training import make_job

    config = ctx.config
    return make_job(
        ctx.adapter,
        steps=config.steps,
        seed=seed,
        algo=config.algo,
        backend=config.backend,
        search=True,
    )


def search_seed(config: LoopConfig, key: CandidateKey) -> int:
    """The training seed of candidate `key` in the search (never an evaluation's)."""
    return config.seed + key.round * 1000 + key.idx


def mark(
    ctx: Context,
    summary: CandidateSummary,
    status: CandidateStatus,
    detail: str = "",
    index_only: dict[str, Any] | None = None,
    **fields: Any,
) -> None:
    """Move a candidate to `status`: its summary in the graph state and its index row change
    together, and the reporter hears of it. `fields` (category, message, fitness, ...) go to
    both; `index_only` to the row alone."""
    summary["status"] = status.value
    summary.update(fields)  # type: ignore[typeddict-item]
    key = CandidateKey.of(summary)
    ctx.run.upsert_candidate(
        key.round, key.idx, status=status.value, **fields, **(index_only or {})
    )
    ctx.reporter.candidate(key, status.value, detail)
