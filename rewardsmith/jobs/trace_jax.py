"""The JAX trace, the orchestrator's side: run the program and read record and export back.

`trace_reward` runs `rewardsmith.programs.trace_jax` through `runner.run_job` and reads both files
back as hostile input. The critic uses it for its jax check, the trainer for the export it trains on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.job_spec import EXPORT_CAP, EXPORT_FILE, REWARD_FILE, STATES_FILE
from rewardsmith.job_spec import TRACE_RESULT_FILE as RESULT_FILE
from rewardsmith.jobs.records import BadRecord, checked, obj, show, texts
from rewardsmith.reward.errors import RewardError
from rewardsmith.sandbox.runner import run_job
from rewardsmith.sandbox.types import Limits, Sandbox
from rewardsmith.sandbox.worker_files import read_bytes, read_record

PROGRAM = "rewardsmith.programs.trace_jax"
RESULT_CAP = 256 * 1024
TRACE_WALL_S = 300.0
TRACE_DISK_MB, TRACE_DISK_FILES = 64, 256  # the export is capped at 16 MB, the record at 256 KB


@dataclass
class TraceReport:
    """The tracer's verdict: `ok` with the export's bytes, or one named error."""

    ok: bool
    error: RewardError | None = None
    export: bytes = b""
    components: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def check_trace(record: Any) -> TraceReport:
    """The trace.json record, checked as hostile input; a malformed one raises BadRecord."""
    record = obj(record, "the trace record")
    warnings = texts(record, "warnings", 50, 1000)
    status = record.get("status")
    if status == "ok":
        return TraceReport(True, None, b"", texts(record, "components", 256, 200), warnings)
    if status != "error":
        raise BadRecord(f"status is {show(status)}, not 'ok' or 'error'")
    try:
        error = RewardError.from_dict(record.get("error"))
    except RewardError as bad:
        raise BadRecord(bad.message) from None
    return TraceReport(False, error, warnings=warnings)


def read_trace(work_dir: Path) -> TraceReport:
    """The checked trace.json, plus the export's bytes (size-capped) when the trace succeeded."""
    report: TraceReport = checked(
        RESULT_FILE, check_trace, read_record(work_dir, RESULT_FILE, RESULT_CAP)
    )
    if report.ok:
        report.export = read_bytes(work_dir, EXPORT_FILE, EXPORT_CAP)
    return report


def trace_reward(
    task_id: str,
    reward_source: str,
    work_dir: Path,
    states_path: Path,
    sandbox: Sandbox,
    limits: Limits | None = None,
    log_path: Path | None = None,
) -> TraceReport:
    """Trace and export `reward_source` in the sandbox; never runs reward code here."""

    limits = (limits or Limits()).within(
        wall_s=TRACE_WALL_S, disk_mb=TRACE_DISK_MB, disk_files=TRACE_DISK_FILES
    )
    traced = run_job(
        sandbox,
        PROGRAM,
        [str(work_dir), task_id],
        workdir=work_dir,
        inputs={REWARD_FILE: reward_source, STATES_FILE: states_path},
        limits=limits,
        log_path=log_path,
        read=read_trace,
        what=f"tracing the reward for jax on {task_id}",
        discard_inputs=[STATES_FILE],
        scratch=True,  # the export's bytes are read back: nothing here is needed afterwards
    )
    if traced.error is not None:
        return TraceReport(False, traced.error)
    report: TraceReport = traced.record
    return report
