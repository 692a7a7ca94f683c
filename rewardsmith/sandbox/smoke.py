"""The smoke test: a few reward calls on recorded states, in the sandbox, before any training.

It catches in a second what would otherwise cost a training run: wrong return types, shapes and
dtypes, non-finite values (naming the component), exceptions on the first call, rewards that are
not deterministic (a warning) and rewards too slow for training.

Sandbox side: `python -m rewardsmith.sandbox.smoke WORK_DIR [MIN_CALLS_PER_S]` reads
WORK_DIR/reward.py and WORK_DIR/states.npz and writes WORK_DIR/smoke.json. It imports neither
torch nor Stable-Baselines3, so it starts in a fraction of a second.
Orchestrator side: `record_states` (random-policy episodes, no reward code) and `smoke_test`,
which runs the module through `runner.run_job` and checks `smoke.json` (`check_smoke`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.atomic import write_record
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox.executor import Limits
from rewardsmith.sandbox.records import BadRecord, checked, number, obj, show, texts
from rewardsmith.sandbox.runner import log_beside, run_job
from rewardsmith.sandbox.worker_files import read_record

REWARD_FILE = "reward.py"
STATES_FILE = "states.npz"
RESULT_FILE = "smoke.json"
BATCH = 64
N_BATCHES = 3
# 50 calls/s at batch 64 is 3,200 transitions/s: slower than that, the reward alone costs more
# time than CartPole's whole PPO training step (see benchmarks/results/sandbox_overhead.md).
MIN_CALLS_PER_S = 50.0
SPEED_BUDGET_S = 1.0
SMOKE_WALL_S = 60.0
# What it may write beyond its inputs: it writes one record of at most 256 KB
# (a training job gets Limits' defaults).
SMOKE_DISK_MB = 16
SMOKE_DISK_FILES = 256
RESULT_CAP = 256 * 1024  # warnings and at most one error with its traceback
MAX_WARNINGS = 50

Transitions = tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray]]


# --- sandbox side ------------------------------------------------------------------------------


def load_transitions(path: Path) -> Transitions:
    """All recorded (state, action, next_state) transitions, concatenated across episodes."""
    from rewardsmith.sandbox.trajectories import load_episodes

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
    from rewardsmith.reward.call import call_reward
    from rewardsmith.reward.loader import load_reward

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


def main(work_dir: Path, min_calls_per_s: float = MIN_CALLS_PER_S) -> int:
    """Sandbox entry point: 0 even when the reward fails, whose error is in `smoke.json`."""
    record = run_checks(work_dir / REWARD_FILE, work_dir / STATES_FILE, min_calls_per_s)
    write_record(work_dir / RESULT_FILE, record)
    return 0


# --- orchestrator side -------------------------------------------------------------------------


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
    from rewardsmith.sandbox.rollout import random_policy, rollout_episodes
    from rewardsmith.sandbox.trajectories import save_episodes

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
        "rewardsmith.sandbox.smoke",
        [str(work_dir), repr(min_calls_per_s)],
        workdir=work_dir,
        inputs={REWARD_FILE: reward_source, STATES_FILE: states_path},
        limits=limits.within(
            wall_s=SMOKE_WALL_S, disk_mb=SMOKE_DISK_MB, disk_files=SMOKE_DISK_FILES
        ),
        log_path=log_beside(work_dir, "smoke"),
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


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), *(float(a) for a in sys.argv[2:3])))
