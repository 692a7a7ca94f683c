"""`replay --rerun`: re-execute a run from its recorded LLM replies and compare the two runs.

The rerun is a new run directory that goes through the whole loop again (critic, training,
analysis, selection, evaluation) with a `ReplayDesigner` in place of the model, so it needs no
LLM and no API key: anyone can check someone else's run directory. It reports

- whether every prompt the rerun built hashes the same as the one the source run sent, and where
  the first difference is when not (a changed template or task description shows up here);
- each candidate's fate and fitness in both runs (RL training is deterministic for a seed on one
  machine, but not across library versions or hardware, so fitness differences are reported,
  not treated as errors);
- the final evaluation of both.

The comparison is also written to `replay.json` in the rerun's directory.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rewardsmith.runs import layout
from rewardsmith.runs.schema import RunStoreError, write_record
from rewardsmith.runs.store import Run, RunStore
from rewardsmith.runs.views import load_view

if TYPE_CHECKING:
    from rewardsmith.eureka_loop.llm import LLMClient
    from rewardsmith.eureka_loop.replay_designer import PromptCheck
    from rewardsmith.eureka_loop.reporter import Reporter

FITNESS_TOLERANCE = 1e-6


@dataclass
class CandidateComparison:
    """One candidate's fate in the source run and in the rerun."""

    key: str
    old_status: str | None
    new_status: str | None
    old_fitness: float | None
    new_fitness: float | None

    @property
    def same(self) -> bool:
        """Same status, and fitness equal within FITNESS_TOLERANCE (or missing in both runs)."""
        if self.old_status != self.new_status:
            return False
        if self.old_fitness is None or self.new_fitness is None:
            return self.old_fitness is self.new_fitness
        return math.isclose(self.old_fitness, self.new_fitness, abs_tol=FITNESS_TOLERANCE)


@dataclass
class ReplayResult:
    """What a rerun found; `reproduced` says whether prompts and fates all came out the same."""

    source: Path
    rerun: Path
    prompts: list[PromptCheck]
    candidates: list[CandidateComparison]
    evaluation: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    diverged: str | None = None
    """Why the rerun stopped early, when it could not follow the source run."""
    versions: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    """Packages whose version differs between the source run and the rerun: (source, rerun)."""

    @property
    def prompt_mismatches(self) -> list[PromptCheck]:
        """The checks whose prompt did not hash as the source's, each saying where it differs."""
        return [c for c in self.prompts if not c.matches]

    @property
    def prompts_reproduced(self) -> bool:
        """Every prompt hashed as the source's and the rerun went all the way; False for a rerun
        that checked no prompt at all, which proves nothing."""
        return bool(self.prompts) and not self.prompt_mismatches and self.diverged is None

    @property
    def reproduced(self) -> bool:
        """The prompts reproduced and every candidate met the same fate (`same`)."""
        return self.prompts_reproduced and all(c.same for c in self.candidates)

    def to_dict(self) -> dict[str, Any]:
        """`replay.json` in the rerun's folder, and what `replay --rerun --json` prints."""
        return {
            "source": str(self.source),
            "rerun": str(self.rerun),
            "prompts_reproduced": self.prompts_reproduced,
            "reproduced": self.reproduced,
            "diverged": self.diverged,
            "prompts": [c.to_dict() for c in self.prompts],
            "candidates": [{**vars(c), "same": c.same} for c in self.candidates],
            "evaluation": {k: {"old": a, "new": b} for k, (a, b) in self.evaluation.items()},
            "versions": {k: {"old": a, "new": b} for k, (a, b) in self.versions.items()},
        }


def rerun(
    source_ref: str | Path,
    runs_dir: Path,
    *,
    seed: int | None = None,
    rounds: int | None = None,
    evaluate: bool | None = None,
    reporter: Reporter | None = None,
) -> ReplayResult:
    """Re-execute a run from its recorded replies in a new run under `runs_dir`; compare the two.

    `seed` defaults to the source run's; `rounds` and `evaluate` can shorten the rerun.
    """
    from rewardsmith.envs.task_copy import copy_task
    from rewardsmith.eureka_loop.no_result import NothingTrainedError
    from rewardsmith.eureka_loop.replay_designer import (
        ReplayDesigner,
        ReplayDivergedError,
        ReplayLLM,
    )
    from rewardsmith.eureka_loop.runner import replay_run
    from rewardsmith.eureka_loop.state import LoopConfig

    store = RunStore(runs_dir.resolve())
    with store.open_run(source_ref) as source:
        info = source.info()
        if not source.llm_dir.is_dir():
            raise RunStoreError(
                f"run {source.run_id} has no recorded replies (no llm/ directory) to rerun from"
            )
        config = LoopConfig.from_dict(dict(info["config"]))
        if seed is not None:
            config.seed = seed
        if rounds is not None:
            config.rounds = rounds
        if evaluate is not None:
            config.evaluate = evaluate
        designer = ReplayDesigner(source)
        llm = ReplayLLM(source, designer.record)
        command = list(sys.argv) if sys.argv and sys.argv[0] else ["rewardsmith", "replay"]
        task = info.get("task") or config.task_id
        with store.create_run(task, config.to_dict(), command, config.seed) as run:
            run.set_status(
                "running", replay_of=str(source.path), model=f"replay of {info['model']}"
            )
            if config.task_file:
                copy_task(source.path / layout.TASK_COPY, run.path)
            diverged = None
            try:
                replay_run(run, config, designer, cast("LLMClient", llm), reporter)
            except ReplayDivergedError as exc:
                diverged = str(exc)
            except NothingTrainedError:
                pass  # as the source run may have ended: the comparison shows every fate
            result = compare(source, run, designer.checks, diverged, config.rounds, config.evaluate)
            write_record(run.path / layout.REPLAY, result.to_dict())
    return result


def compare(
    source: Run,
    rerun_run: Run,
    checks: list[PromptCheck],
    diverged: str | None,
    rounds: int,
    evaluated: bool,
) -> ReplayResult:
    """Compare the candidates of the first `rounds` rounds and, if `evaluated`, the evaluation."""
    old, new = load_view(source), load_view(rerun_run)
    old_by_key = {c.key: c for c in old.candidates if c.round < rounds}
    new_by_key = {c.key: c for c in new.candidates}
    comparisons = [
        CandidateComparison(
            key,
            getattr(old_by_key.get(key), "status", None),
            getattr(new_by_key.get(key), "status", None),
            getattr(old_by_key.get(key), "fitness", None),
            getattr(new_by_key.get(key), "fitness", None),
        )
        for key in sorted(old_by_key.keys() | new_by_key.keys())
    ]
    evaluation = {}
    for name in ("best", "human", "sparse") if evaluated else ():
        before = ((old.evaluation or {}).get(name) or {}).get("fitness")
        after = ((new.evaluation or {}).get(name) or {}).get("fitness")
        if before is not None or after is not None:
            evaluation[name] = (before, after)
    old_versions, new_versions = old.info.get("packages", {}), new.info.get("packages", {})
    versions = {
        name: (old_versions.get(name), new_versions.get(name))
        for name in sorted(old_versions.keys() | new_versions.keys())
        if old_versions.get(name) != new_versions.get(name)
    }
    return ReplayResult(
        source.path, rerun_run.path, list(checks), comparisons, evaluation, diverged, versions
    )
