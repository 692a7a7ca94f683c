"""A task's named state fields beside a Gymnasium environment, and the arrays episodes keep.

Gymnasium and numpy only (no learner library), so the reward-free programs that roll a policy
out (the evaluator, the video program) start without importing torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.envs.schema import FieldRecord, Slot, StateSchema

STATE_KEY = "state_fields"


class StateRows:
    """Preallocated `[N, D]` buffers that N wrapped environments write their state vectors into.

    Training reads the state of every environment on every step; writing each flat vector into
    a row (instead of an `info` entry that SB3 then deep-copies) keeps that cheap.
    """

    def __init__(self, n_envs: int, schema: StateSchema) -> None:
        self.layout = schema.layout
        self.after_step = np.zeros((n_envs, schema.size))
        self.after_reset = np.zeros((n_envs, schema.size))


class StateFieldsWrapper(gym.Wrapper):
    """Exposes the adapter's named state fields after every reset and step.

    On its own it puts them into `info[STATE_KEY]` as a `FieldRecord` (a read-only mapping of
    field name to value, backed by one flat vector). Given `rows`, as in training, it writes the
    flat vector into row `index` of `rows.after_step` / `rows.after_reset` instead.
    """

    def __init__(
        self, env: gym.Env, adapter: TaskAdapter, rows: StateRows | None = None, index: int = 0
    ) -> None:
        super().__init__(env)
        self._adapter = adapter
        # Adapters read simulator state from `env.unwrapped`; handing them the base env spares
        # a walk down the wrapper chain on every step.
        self._base = env.unwrapped
        self._layout = adapter.schema.layout
        self._rows = rows
        self._index = index

    @override
    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        vector = self._adapter.state_vector(self._base, obs, info)
        if self._rows is None:
            info[STATE_KEY] = FieldRecord(vector, self._layout)
        else:
            self._rows.after_reset[self._index] = vector
        return obs, info

    @override
    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        vector = self._adapter.state_vector(self._base, obs, info)
        if self._rows is None:
            info[STATE_KEY] = FieldRecord(vector, self._layout)
        else:
            self._rows.after_step[self._index] = vector
        return obs, reward, terminated, truncated, info


def stack_fields(per_env: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Batch per-environment fields into `[N]` / `[N, d]` float64 arrays (contiguous copies)."""
    if per_env and all(isinstance(fields, FieldRecord) for fields in per_env):
        rows = np.stack([fields.vector for fields in per_env])  # type: ignore[attr-defined]
        layout: dict[str, Slot] = per_env[0].layout  # type: ignore[attr-defined]
        return {name: np.ascontiguousarray(rows[:, slot]) for name, slot in layout.items()}
    names = per_env[0]
    return {name: np.array([row[name] for row in per_env], dtype=np.float64) for name in names}


def batch_actions(actions: np.ndarray, action_space: gym.Space) -> np.ndarray:
    """Actions as the contract gives them, in a new array (never the learner's own): `[N]` ints
    for discrete spaces, else `[N, d]` float64."""
    if isinstance(action_space, gym.spaces.Discrete):
        return np.array(actions, dtype=np.int64).reshape(-1)
    if type(actions) is np.ndarray and actions.ndim == 2:
        return actions.astype(np.float64)  # SB3's usual float32 `[N, d]`: one copy
    return np.array(actions, dtype=np.float64).reshape(len(actions), -1)
