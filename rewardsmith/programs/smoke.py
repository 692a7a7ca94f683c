"""The smoke test's program: a few reward calls on recorded states, before any training.

`python -m rewardsmith.programs.smoke WORK_DIR MIN_CALLS_PER_S` reads WORK_DIR/reward.py and
WORK_DIR/states.npz and writes WORK_DIR/smoke.json. It catches in a second what would otherwise
cost a training run: wrong return types, shapes and dtypes, non-finite values (naming the
component), exceptions on the first call, rewards that are not deterministic (a warning) and rewards
too slow for training. It imports neither torch nor Stable-Baselines3, so it starts in a fraction of
a second. The orchestrator's side is `rewardsmith.jobs.smoke`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.job_spec import REWARD_FILE, SMOKE_RESULT_FILE, STATES_FILE
from rewardsmith.programs.sealed_outputs import SealedOutputs
from rewardsmith.reward.call import call_reward
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.loader import load_reward
from rewardsmith.rl.trajectories import load_episodes

BATCH = 64
N_BATCHES = 3
SPEED_BUDGET_S = 1.0

Transitions = tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray]]


def load_transitions(path: Path) -> Transitions:
    """All recorded (state, action, next_state) transitions, concatenated across episodes."""
    episodes = [episode for episode, _, _ in load_episodes(path)]
    names = list(episodes[0].states)
    state = {n: np.concatenate([e.states[n][:-1] for e in episodes]) for n in names}
    next_state = {n: np.concatenate([e.states[n][1:] for e in episodes]) for n in names}
    return state, np.concatenate([e.actions for e in episodes]), next_state


def _batch(data: Transitions, start: int, size: int) -> Transitions:
    state, action, next_state = data
    rows = slice(start, start + size)
    return (
        {n: v[rows] for n, v in state.items()},
        action[rows],
        {n: v[rows] for n, v in next_state.items()},
    )


def _same(
    a: tuple[np.ndarray, dict[str, np.ndarray]], b: tuple[np.ndarray, dict[str, np.ndarray]]
) -> bool:
    if a[1].keys() != b[1].keys() or not np.array_equal(a[0], b[0], equal_nan=True):
        return False
    return all(np.array_equal(a[1][n], b[1][n], equal_nan=True) for n in a[1])


def run_checks(reward_path: Path, states_path: Path, min_calls_per_s: float) -> dict[str, Any]:
    """Load and call the reward; return the smoke.json record (errors become a category)."""
    filename = str(reward_path)
    warnings: list[str] = []
    try:
        reward_fn = load_reward(reward_path)
        data = load_transitions(states_path)
        n = len(data[1])
        size = min(BATCH, n)
        starts = sorted({min(i * n // N_BATCHES, n - size) for i in range(N_BATCHES)})
        for start in starts:  # types, shapes, dtypes, finiteness: checked by call_reward
            call_reward(reward_fn, *_batch(data, start, size), None, filename)
        first = _batch(data, starts[0], size)
        if not _same(
            call_reward(reward_fn, *first, None, filename),
            call_reward(reward_fn, *first, None, filename),
        ):
            warnings.append(
                f"{ErrorCategory.NONDETERMINISTIC.value}: "
                "two calls on the same batch gave different "
                "rewards (randomness or the clock?); training will see noise"
            )
        calls, began = 0, time.perf_counter()
        while calls < 200 and time.perf_counter() - began < SPEED_BUDGET_S:
            call_reward(reward_fn, *first, None, filename)
            calls += 1
        calls_per_s = calls / (time.perf_counter() - began)
    except RewardError as failure:
        return {
            "status": "error",
            "error": failure.to_dict(),
            "warnings": warnings,
            "calls_per_s": None,
        }
    record: dict[str, Any] = {
        "status": "ok",
        "warnings": warnings,
        "calls_per_s": calls_per_s,
        "batch": size,
    }
    if calls_per_s < min_calls_per_s:
        slow = RewardError(
            ErrorCategory.TOO_SLOW,
            f"the reward ran {calls_per_s:.1f} calls/s on a batch of {size}; "
            f"training needs at least {min_calls_per_s:.0f} calls/s "
            f"({min_calls_per_s * size:.0f} transitions/s): vectorise it "
            "with numpy instead of looping in Python",
        )
        record.update(status="error", error=slow.to_dict())
    return record


def main(work_dir: Path, min_calls_per_s: float) -> int:
    """Sandbox entry point: 0 even when the reward fails, whose error is in `smoke.json`."""
    outputs = SealedOutputs(work_dir, SMOKE_RESULT_FILE)
    record = run_checks(work_dir / REWARD_FILE, work_dir / STATES_FILE, min_calls_per_s)
    outputs.write_record(SMOKE_RESULT_FILE, record)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), float(sys.argv[2])))
