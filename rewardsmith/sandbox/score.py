"""Score the trajectory bank with a candidate reward, inside the sandbox, before any training.

The preference check needs each bank episode's return under the candidate reward; computing it
means running the candidate's code, which never happens in the orchestrator.

Sandbox side: `python -m rewardsmith.sandbox.score WORK_DIR [GAMMA]` reads WORK_DIR/reward.py and
WORK_DIR/bank.npz and writes WORK_DIR/score.json: per episode, the return (sum of the per-step
total), the discounted return from the first step (what the learner maximises), the per-step mean,
and the sum of every component. Like the smoke test it imports neither
torch nor Stable-Baselines3, so it starts in a fraction of a second.
Orchestrator side: `score_bank`, which copies the bank in, runs the module through
`runner.run_job` and checks `score.json` (`check_scores`: one finite number per bank episode).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.atomic import write_record
from rewardsmith.reward.errors import RewardError
from rewardsmith.sandbox.executor import Limits
from rewardsmith.sandbox.records import (
    BadRecord,
    checked,
    finite_list,
    named,
    numbers,
    obj,
    show,
)
from rewardsmith.sandbox.runner import log_beside, run_job
from rewardsmith.sandbox.worker_files import read_record

REWARD_FILE = "reward.py"
BANK_FILE = "bank.npz"
RESULT_FILE = "score.json"
CHUNK = 8192  # transitions per reward call: bounded memory, few calls
SCORE_WALL_S = 120.0
# What it may write beyond its inputs: it writes one record of at most 16 MB, through a temp file
# (a training job gets Limits' defaults).
SCORE_DISK_MB = 64
SCORE_DISK_FILES = 256
RESULT_CAP = 16 * 1024 * 1024  # four numbers and every component's sum for each bank episode


# --- sandbox side ------------------------------------------------------------------------------


def _episode_arrays(
    path: Path,
) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """Transition arrays of all episodes, plus each episode's length (states have T+1 rows)."""
    with np.load(path, allow_pickle=False) as data:
        offsets = data["offsets"].astype(np.int64)
        actions = data["actions"]
        fields = {
            key[len("state/") :]: data[key].astype(np.float64)
            for key in data.files
            if key.startswith("state/")
        }
    lengths = np.diff(offsets)
    n = len(lengths)
    # State rows of episode i run from offsets[i] + i to offsets[i + 1] + i (inclusive).
    before = (
        np.concatenate([np.arange(offsets[i] + i, offsets[i + 1] + i) for i in range(n)])
        if n
        else np.zeros(0, int)
    )
    state = {name: values[before] for name, values in fields.items()}
    next_state = {name: values[before + 1] for name, values in fields.items()}
    return actions, state, next_state, lengths


def score_episodes(reward_path: Path, bank_path: Path, gamma: float = 0.99) -> dict[str, Any]:
    """Call the reward on every bank transition; return the score.json record."""
    from rewardsmith.reward.call import call_reward
    from rewardsmith.reward.loader import load_reward

    filename = str(reward_path)
    try:
        reward_fn = load_reward(reward_path)
        actions, state, next_state, lengths = _episode_arrays(bank_path)
        totals: list[np.ndarray] = []
        parts: dict[str, list[np.ndarray]] = {}
        for start in range(0, len(actions), CHUNK):
            rows = slice(start, start + CHUNK)
            total, components = call_reward(
                reward_fn,
                {k: v[rows] for k, v in state.items()},
                actions[rows],
                {k: v[rows] for k, v in next_state.items()},
                None,
                filename,
            )
            totals.append(total)
            for name, values in components.items():
                parts.setdefault(name, []).append(values)
    except RewardError as error:
        return {"status": "error", "error": error.to_dict()}
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    safe = np.maximum(lengths, 1)

    def per_episode(values: list[np.ndarray]) -> np.ndarray:
        flat = np.concatenate(values) if values else np.zeros(0)
        sums = np.add.reduceat(flat, starts) if len(flat) else np.zeros(len(lengths))
        return np.where(lengths > 0, sums, 0.0)

    returns = per_episode(totals)
    steps_in = np.arange(int(lengths.sum())) - np.repeat(starts, lengths)
    discounted = per_episode(
        [np.concatenate(totals) * gamma ** steps_in.astype(np.float64)] if totals else []
    )
    return {
        "status": "ok",
        "returns": returns.tolist(),
        "discounted": discounted.tolist(),
        "per_step": (returns / safe).tolist(),
        "components": {name: per_episode(values).tolist() for name, values in parts.items()},
    }


def main(work_dir: Path, gamma: float = 0.99) -> int:
    """Sandbox entry point: 0 even when the reward fails, whose error is in `score.json`."""
    record = score_episodes(work_dir / REWARD_FILE, work_dir / BANK_FILE, gamma)
    write_record(work_dir / RESULT_FILE, record)
    return 0


# --- orchestrator side -------------------------------------------------------------------------


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
        "rewardsmith.sandbox.score",
        [str(work_dir), repr(float(gamma))],
        workdir=work_dir,
        inputs={REWARD_FILE: reward_source, BANK_FILE: bank_path},
        limits=limits.within(
            wall_s=SCORE_WALL_S, disk_mb=SCORE_DISK_MB, disk_files=SCORE_DISK_FILES
        ),
        log_path=log_beside(work_dir, "score"),
        read=lambda directory: read_scores(directory, episodes),
        what="scoring the trajectory bank",
        discard_inputs=[BANK_FILE],
        on_poll=on_poll,
        scratch=True,
    )
    scores: BankScores = job.record if job.error is None else BankScores(ok=False, error=job.error)
    scores.warnings, scores.wall_s = list(job.run.warnings), job.run.wall_s
    return scores


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), *(float(a) for a in sys.argv[2:3])))
