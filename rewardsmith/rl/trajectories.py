"""A compact on-disk format for recorded episodes (state fields, actions, fitness, success)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from rewardsmith.envs.adapter import Episode


def save_episodes(
    path: Path, episodes: list[Episode], fitness: list[float], success: list[bool | None]
) -> None:
    """Concatenate episodes into flat arrays with offsets; float32 keeps files small."""
    offsets = np.cumsum([0] + [e.length for e in episodes])
    arrays: dict[str, np.ndarray] = {
        "offsets": offsets,
        "actions": np.concatenate([e.actions for e in episodes]),
        "env_rewards": np.concatenate([e.env_rewards for e in episodes]).astype(np.float32),
        "terminated": np.array([e.terminated for e in episodes]),
        "truncated": np.array([e.truncated for e in episodes]),
        "fitness": np.asarray(fitness, dtype=np.float64),
        "success": np.array([-1 if s is None else int(s) for s in success], dtype=np.int8),
    }
    for name in episodes[0].states:
        # States have one more row than actions per episode (the reset state).
        arrays[f"state/{name}"] = np.concatenate([e.states[name] for e in episodes]).astype(
            np.float32
        )
    with path.open("wb") as handle:
        np.savez_compressed(handle, **arrays)  # type: ignore[arg-type]


def load_episodes(path: Path) -> list[tuple[Episode, float, bool | None]]:
    """Inverse of `save_episodes`; never unpickles. Only for files of the orchestrator's own:
    one a sandboxed program wrote goes through `records.read_trajectories`, which checks it."""
    with np.load(path, allow_pickle=False) as data:
        return episodes_from_arrays({key: data[key] for key in data.files})


def episodes_from_arrays(
    data: Mapping[str, np.ndarray],
) -> list[tuple[Episode, float, bool | None]]:
    """The episodes, fitness and success held in `save_episodes`' arrays."""
    offsets = data["offsets"]
    fields = {key[len("state/") :]: data[key] for key in data if key.startswith("state/")}
    actions, env_rewards = data["actions"], data["env_rewards"]
    records = []
    for i in range(len(offsets) - 1):
        start, end = int(offsets[i]), int(offsets[i + 1])
        # State rows are offset by one extra row per earlier episode.
        s_start, s_end = start + i, end + i + 1
        episode = Episode(
            states={
                name: values[s_start:s_end].astype(np.float64) for name, values in fields.items()
            },
            actions=actions[start:end],
            env_rewards=env_rewards[start:end].astype(np.float64),
            terminated=bool(data["terminated"][i]),
            truncated=bool(data["truncated"][i]),
        )
        success = int(data["success"][i])
        records.append((episode, float(data["fitness"][i]), None if success < 0 else bool(success)))
    return records
