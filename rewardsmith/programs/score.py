"""The bank scoring program: a candidate reward's return on every trajectory-bank episode.

The preference check needs each bank episode's return under the candidate reward; computing it
means running the candidate's code, which never happens in the orchestrator.
`python -m rewardsmith.programs.score WORK_DIR [GAMMA]` reads WORK_DIR/reward.py and
WORK_DIR/bank.npz and writes WORK_DIR/score.json: per episode, the return (sum of the per-step
total), the discounted return from the first step (what the learner maximises), the per-step mean,
and the sum of every component. Like the smoke test it imports neither torch nor
Stable-Baselines3. The orchestrator's side is `rewardsmith.jobs.score`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.job_spec import BANK_FILE, REWARD_FILE, SCORE_RESULT_FILE
from rewardsmith.programs.sealed_outputs import SealedOutputs
from rewardsmith.reward.call import call_reward
from rewardsmith.reward.errors import RewardError
from rewardsmith.reward.loader import load_reward

CHUNK = 8192  # transitions per reward call: bounded memory, few calls


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
    outputs = SealedOutputs(work_dir, SCORE_RESULT_FILE)
    record = score_episodes(work_dir / REWARD_FILE, work_dir / BANK_FILE, gamma)
    outputs.write_record(SCORE_RESULT_FILE, record)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), *(float(a) for a in sys.argv[2:3])))
