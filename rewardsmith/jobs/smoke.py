"""The smoke test, the orchestrator's side: record states, run the program, check its record.

`record_states` rolls random-policy episodes out (no reward code); `smoke_test` runs
`rewardsmith.programs.smoke` through `runner.run_job` and checks `smoke.json` (`check_smoke`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.job_spec import REWARD_FILE, STATES_FILE
from rewardsmith.job_spec import SMOKE_RESULT_FILE as RESULT_FILE
from rewardsmith.jobs.records import BadRecord, checked, number, obj, show, texts
from rewardsmith.reward.errors import RewardError
from rewardsmith.rl.rollout import random_policy, rollout_episodes
from rewardsmith.rl.trajectories import save_episodes
from rewardsmith.runs import layout
from rewardsmith.sandbox.runner import run_job
from rewardsmith.sandbox.types import Limits
from rewardsmith.sandbox.worker_files import read_record

PROGRAM = "rewardsmith.programs.smoke"
# 50 calls/s at batch 64 is 3,200 transitions/s: slower than that, the reward alone costs more
# time than CartPole's whole PPO training step (see benchmarks/results/sandbox_overhead.md).
MIN_CALLS_PER_S = 50.0
SMOKE_WALL_S = 60.0
# What it may write beyond its inputs: it writes one record of at most 256 KB
# (a training job gets Limits' defaults).
SMOKE_DISK_MB = 16
SMOKE_DISK_FILES = 256
RESULT_CAP = 256 * 1024  # warnings and at most one error with its traceback
MAX_WARNINGS = 50


@dataclass
class SmokeReport:
    """The smoke test's verdict: `ok` or one named error, plus warnings (e.g. nondeterministic)."""

    ok: bool
    error: RewardError | None = None
    warnings: list[str] = field(default_factory=list)
    calls_per_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON, its error as `RewardError.to_dict` writes it."""
        return {
            "ok": self.ok,
            "error": self.error.to_dict() if self.error else None,
            "warnings": self.warnings,
            "calls_per_s": self.calls_per_s,
        }


def record_states(adapter: Any, path: Path, episodes: int = 4, seed: int = 0) -> Path:
    """Record random-policy episodes for smoke tests; runs in the orchestrator (no reward code)."""
    recorded = rollout_episodes(adapter, random_policy(adapter, seed), episodes, seed)
    save_episodes(
        path,
        recorded,
        [adapter.fitness(e) for e in recorded],
        [adapter.success(e) for e in recorded],
    )
    return path


def check_smoke(record: Any) -> SmokeReport:
    """The schema of `smoke.json` (see `run_checks`), as the report it stands for."""
    record = obj(record, "the smoke record")
    warnings = texts(record, "warnings", MAX_WARNINGS, 1000)
    status = record.get("status")
    if status == "ok":
        return SmokeReport(True, None, warnings, number(record, "calls_per_s", 0.0))
    if status != "error":
        raise BadRecord(f"status is {show(status)}, not 'ok' or 'error'")
    try:
        error = RewardError.from_dict(record.get("error"))
    except RewardError as bad:
        raise BadRecord(bad.message) from None
    return SmokeReport(False, error, warnings, number(record, "calls_per_s", 0.0, optional=True))


def read_smoke(work_dir: Path) -> SmokeReport:
    """The checked `smoke.json`; a missing or bad one raises `WorkerFileError`."""
    record = read_record(work_dir, RESULT_FILE, RESULT_CAP)
    return checked(RESULT_FILE, check_smoke, record)


def smoke_test(
    adapter: Any,
    reward_source: str,
    work_dir: Path,
    states_path: Path,
    sandbox: Any,
    limits: Limits | None = None,
    min_calls_per_s: float = MIN_CALLS_PER_S,
    on_poll: Callable[[], None] | None = None,
) -> SmokeReport:
    """Run the smoke checks on `reward_source` inside `sandbox`.

    `work_dir` (made anew: whatever it held is removed) is the only writable directory, removed
    again once the record is read, whatever the outcome; the log goes to `logs/smoke.log` beside
    it, out of the sandbox's reach. An exception from `on_poll` (a cancel) kills the program and
    passes.
    """
    limits = limits or Limits()
    job = run_job(
        sandbox,
        PROGRAM,
        [str(work_dir), repr(min_calls_per_s)],
        workdir=work_dir,
        inputs={REWARD_FILE: reward_source, STATES_FILE: states_path},
        limits=limits.within(
            wall_s=SMOKE_WALL_S, disk_mb=SMOKE_DISK_MB, disk_files=SMOKE_DISK_FILES
        ),
        log_path=layout.program_log(work_dir, "smoke"),
        read=read_smoke,
        what=f"smoke test on {adapter.id}",
        discard_inputs=[STATES_FILE],
        on_poll=on_poll,
        scratch=True,
    )
    if job.error is not None:
        return SmokeReport(ok=False, error=job.error, warnings=list(job.run.warnings))
    report: SmokeReport = job.record
    report.warnings += job.run.warnings
    return report
