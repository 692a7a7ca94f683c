"""The JAX trace program: the only place a candidate reward's Python runs for the JAX backend.

`python -m rewardsmith.programs.trace_jax WORK_DIR TASK_ID` reads WORK_DIR/reward.py and
WORK_DIR/states.npz (recorded random-policy transitions, no reward code involved), and:

1. runs the reward under numpy through the contract's checked call (types, shapes, finiteness);
2. loads it again with `np` bound to `jax.numpy`, traces it over a symbolic batch size and
   exports it (`jax.export`): code that cannot trace is a named `jax_incompatible` error;
3. calls the export on the same states and requires agreement with numpy;
4. writes WORK_DIR/reward.jaxexport (serialised StableHLO) and WORK_DIR/trace.json.

The orchestrator's side is `rewardsmith.jobs.trace_jax`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.job_spec import EXPORT_FILE, REWARD_FILE, STATES_FILE, TRACE_RESULT_FILE
from rewardsmith.programs.sealed_outputs import SealedOutputs
from rewardsmith.programs.smoke import load_transitions
from rewardsmith.reward.call import call_reward
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.loader import load_reward

MAX_ROWS = 512
RTOL, ATOL = 1e-4, 1e-4


def signature_for(task_id: str, actions: np.ndarray) -> Any:
    """The reward signature of the task's JAX variant; the recorded `actions` are not consulted."""
    from rewardsmith.envs import load_task
    from rewardsmith.programs.jax_export import Signature
    from rewardsmith.rl.jax.tasks import jax_task

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


def run_trace(work_dir: Path, task_id: str) -> tuple[dict[str, Any], bytes]:
    """The trace.json record, and the export (empty unless the reward traced and agreed)."""
    from rewardsmith.programs.jax_contract import load_jax_reward
    from rewardsmith.programs.jax_export import call_export, export_reward, load_reward_export

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
        return {"status": "error", "error": failure.to_dict(), "warnings": []}, b""
    return {"status": "ok", "components": names, "warnings": []}, data


def main(work_dir: Path, task_id: str) -> int:
    """Trace WORK_DIR's reward and write trace.json; a reward's failure is in the record, exit 0."""
    from rewardsmith.rl.jax import prepare_process

    prepare_process()
    outputs = SealedOutputs(work_dir, TRACE_RESULT_FILE, EXPORT_FILE)  # before JAX starts threads
    record, export = run_trace(work_dir, task_id)
    outputs.write_bytes(EXPORT_FILE, export)
    outputs.write_record(TRACE_RESULT_FILE, record)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2]))
