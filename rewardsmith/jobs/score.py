"""Bank scoring, the orchestrator's side: copy the bank in, run the program, check its record.

`score_bank` runs `rewardsmith.programs.score` through `runner.run_job` and checks `score.json`
(`check_scores`: one finite number per bank episode).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.job_spec import BANK_FILE, REWARD_FILE
from rewardsmith.job_spec import SCORE_RESULT_FILE as RESULT_FILE
from rewardsmith.jobs.records import (
    BadRecord,
    checked,
    finite_list,
    named,
    numbers,
    obj,
    show,
)
from rewardsmith.reward.errors import RewardError
from rewardsmith.runs import layout
from rewardsmith.sandbox.runner import run_job
from rewardsmith.sandbox.types import Limits
from rewardsmith.sandbox.worker_files import read_record

PROGRAM = "rewardsmith.programs.score"
SCORE_WALL_S = 120.0
# What it may write beyond its inputs: it writes one record of at most 16 MB, through a temp file
# (a training job gets Limits' defaults).
SCORE_DISK_MB = 64
SCORE_DISK_FILES = 256
RESULT_CAP = 16 * 1024 * 1024  # four numbers and every component's sum for each bank episode


@dataclass
class BankScores:
    """Per-episode returns of one reward on the bank, or the named error that stopped it."""

    ok: bool
    returns: list[float] = field(default_factory=list)
    discounted: list[float] = field(default_factory=list)
    per_step: list[float] = field(default_factory=list)
    components: dict[str, list[float]] = field(default_factory=dict)
    error: RewardError | None = None
    warnings: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def check_scores(record: Any, episodes: int) -> BankScores:
    """The schema of `score.json` (see `score_episodes`): finite numbers, one per bank episode."""
    record = obj(record, "the score record")
    status = record.get("status")
    if status == "error":
        try:
            return BankScores(ok=False, error=RewardError.from_dict(record.get("error")))
        except RewardError as bad:
            raise BadRecord(bad.message) from None
    if status != "ok":
        raise BadRecord(f"status is {show(status)}, not 'ok' or 'error'")
    return BankScores(
        ok=True,
        returns=[float(v) for v in numbers(record, "returns", episodes)],
        discounted=[float(v) for v in numbers(record, "discounted", episodes)],
        per_step=[float(v) for v in numbers(record, "per_step", episodes)],
        components={
            name: [float(v) for v in values]
            for name, values in named(record, "components", finite_list(episodes)).items()
        },
    )


def read_scores(work_dir: Path, episodes: int) -> BankScores:
    """The checked `score.json` for a bank of `episodes`; a bad one raises `WorkerFileError`."""
    record = read_record(work_dir, RESULT_FILE, RESULT_CAP)
    return checked(RESULT_FILE, lambda r: check_scores(r, episodes), record)


def bank_episodes(bank_path: Path) -> int:
    """How many episodes the bank holds (the orchestrator's own file)."""
    with np.load(bank_path, allow_pickle=False) as data:
        return len(data["offsets"]) - 1


def score_bank(
    reward_source: str,
    work_dir: Path,
    bank_path: Path,
    sandbox: Any,
    limits: Limits | None = None,
    gamma: float = 0.99,
    on_poll: Callable[[], None] | None = None,
) -> BankScores:
    """Score every bank episode with `reward_source` in `sandbox`.

    `work_dir` (made anew: whatever it held is removed) is the only writable directory, removed
    again once the record is read, whatever the outcome; the log goes to `logs/score.log` beside
    it, out of the sandbox's reach. An exception from `on_poll` (a cancel) kills the program and
    passes.
    """
    limits = limits or Limits()
    episodes = bank_episodes(bank_path)
    job = run_job(
        sandbox,
        PROGRAM,
        [str(work_dir), repr(float(gamma))],
        workdir=work_dir,
        inputs={REWARD_FILE: reward_source, BANK_FILE: bank_path},
        limits=limits.within(
            wall_s=SCORE_WALL_S, disk_mb=SCORE_DISK_MB, disk_files=SCORE_DISK_FILES
        ),
        log_path=layout.program_log(work_dir, "score"),
        read=lambda directory: read_scores(directory, episodes),
        what="scoring the trajectory bank",
        discard_inputs=[BANK_FILE],
        on_poll=on_poll,
        scratch=True,
    )
    scores: BankScores = job.record if job.error is None else BankScores(ok=False, error=job.error)
    scores.warnings, scores.wall_s = list(job.run.warnings), job.run.wall_s
    return scores
