"""Trace a candidate reward for the JAX backend, inside the sandbox: the only place its Python runs.

Sandbox side: `python -m rewardsmith.jax_backend.trace WORK_DIR TASK_ID` reads WORK_DIR/reward.py
and WORK_DIR/states.npz (recorded random-policy transitions, no reward code involved), and:

1. runs the reward under numpy through the contract's checked call (types, shapes, finiteness);
2. loads it again with `np` bound to `jax.numpy`, traces it over a symbolic batch size and
   exports it (`jax.export`): code that cannot trace is a named `jax_incompatible` error;
3. calls the export on the same states and requires agreement with numpy;
4. writes WORK_DIR/reward.jaxexport (serialised StableHLO) and WORK_DIR/trace.json.

Orchestrator side: `trace_reward` runs it through `runner.run_job` and reads both back as hostile
input. The critic uses it for its jax check, the trainer for the export it trains on.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.atomic import write_record
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox.executor import Limits
from rewardsmith.sandbox.records import BadRecord, checked, obj, show, texts
from rewardsmith.sandbox.runner import Sandbox, run_job
from rewardsmith.sandbox.worker_files import read_bytes, read_record

REWARD_FILE = "reward.py"
STATES_FILE = "states.npz"
EXPORT_FILE = "reward.jaxexport"
RESULT_FILE = "trace.json"
RESULT_CAP = 256 * 1024
MAX_ROWS = 512
RTOL, ATOL = 1e-4, 1e-4
TRACE_WALL_S = 300.0
TRACE_DISK_MB, TRACE_DISK_FILES = 64, 256  # the export is capped at 16 MB, the record at 256 KB
MODULE = "rewardsmith.jax_backend.trace"


# --- sandbox side ------------------------------------------------------------------------------


def signature_for(task_id: str, actions: np.ndarray) -> Any:
    """The reward signature of the task's JAX variant; the recorded `actions` are not consulted."""
    from rewardsmith.envs import load_task
    from rewardsmith.jax_backend.export import Signature
    from rewardsmith.jax_backend.tasks import jax_task

    task = jax_task(task_id)
    return Signature.for_task(load_task(task_id), task.discrete, task.policy_action_size)


def _agree(reference: np.ndarray, traced: Any, what: str) -> str | None:
    traced = np.asarray(traced, dtype=np.float64)
    if traced.shape != reference.shape:
        return f"{what} has shape {traced.shape} under jax.numpy, {reference.shape} under numpy"
    close = np.isclose(traced, reference, rtol=RTOL, atol=ATOL)
    if close.all():
        return None
    worst = int(np.argmax(np.where(close, -np.inf, np.abs(traced - reference))))
    return (
        f"{what} differs between numpy and jax.numpy on {int((~close).sum())} of "
        f"{close.size} recorded states (e.g. {reference.flat[worst]:.6g} vs {traced.flat[worst]:.6g})"
    )


def run_trace(work_dir: Path, task_id: str) -> dict[str, Any]:
    """The trace.json record; writes the export beside it when the reward traced and agreed."""
    from rewardsmith.jax_backend.contract import load_jax_reward
    from rewardsmith.jax_backend.export import call_export, export_reward, load_reward_export
    from rewardsmith.reward.call import call_reward
    from rewardsmith.reward.loader import load_reward
    from rewardsmith.sandbox.smoke import load_transitions

    reward_path = work_dir / REWARD_FILE
    filename = str(reward_path)
    source = reward_path.read_text()
    try:
        state, action, next_state = load_transitions(work_dir / STATES_FILE)
        rows = slice(0, min(MAX_ROWS, len(action)))
        state = {k: v[rows] for k, v in state.items()}
        next_state = {k: v[rows] for k, v in next_state.items()}
        action = action[rows]
        signature = signature_for(task_id, action)
        total, components = call_reward(
            load_reward(reward_path), state, action, next_state, None, filename
        )
        data, names = export_reward(load_jax_reward(source, filename), signature, filename)
        if sorted(components) != names:
            raise RewardError(
                ErrorCategory.JAX_INCOMPATIBLE,
                f"the components differ: numpy gives {sorted(components)}, jax.numpy {names}",
            )
        try:  # the trainer's own check, so that the designer hears of a refusal now
            exported, _ = load_reward_export(data, signature)
        except RewardError as refused:
            raise RewardError(
                ErrorCategory.JAX_INCOMPATIBLE,
                refused.message.replace(
                    "reward export refused: it holds", "the traced reward needs"
                )
                + ", which the trainer refuses (np.linalg and other library kernels compile to "
                "custom calls). Fix: write it with elementwise numpy (np.sqrt, np.sum, np.where)",
            ) from None
        jax_action = action.astype(np.int32) if signature.discrete else action.astype(np.float32)
        if not signature.discrete:
            jax_action = jax_action.reshape(len(jax_action), -1)
        traced_total, traced_components = call_export(
            exported, signature.fields, state, jax_action, next_state
        )
        problems = [_agree(total, traced_total, "the total")] + [
            _agree(components[n], traced_components[n], f"component {n!r}") for n in names
        ]
        if found := [p for p in problems if p]:
            raise RewardError(
                ErrorCategory.JAX_INCOMPATIBLE,
                "; ".join(found[:3]) + ". Fix: use numpy operations that give the same result "
                "in float32 under jax.numpy (no in-place updates, no float64-only precision)",
            )
    except RewardError as failure:
        return {"status": "error", "error": failure.to_dict(), "warnings": []}
    (work_dir / EXPORT_FILE).write_bytes(data)
    return {"status": "ok", "components": names, "warnings": []}


def main(work_dir: Path, task_id: str) -> int:
    """Trace WORK_DIR's reward and write trace.json; a reward's failure is in the record, exit 0."""
    from rewardsmith.jax_backend import prepare_process

    prepare_process()
    write_record(work_dir / RESULT_FILE, run_trace(work_dir, task_id))
    return 0


# --- orchestrator side -------------------------------------------------------------------------


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
    from rewardsmith.jax_backend.export import EXPORT_CAP

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
        MODULE,
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


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
