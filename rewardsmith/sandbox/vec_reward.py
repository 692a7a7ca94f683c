"""Apply a contract reward to vectorised environments through wrappers, never by editing env code."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.envs.schema import FieldRecord, ReadOnlyFields, Slot, StateBatch
from rewardsmith.reward.call import call_reward, exception_category
from rewardsmith.reward.check import check_output
from rewardsmith.reward.errors import RewardError
from rewardsmith.reward.loader import RewardFn, user_traceback

__all__ = ["STATE_KEY", "ContractRewardVecEnv", "call_reward", "make_vec_env"]

STATE_KEY = "state_fields"


class StateFieldsWrapper(gym.Wrapper):
    """Puts the adapter's named state fields into `info` after every reset and step.

    `info[STATE_KEY]` is a `FieldRecord`: a read-only mapping of field name to value, backed by
    one flat vector so that batching N environments is a single `np.stack`.
    """

    def __init__(self, env: gym.Env, adapter: TaskAdapter) -> None:
        super().__init__(env)
        self._adapter = adapter
        self._layout = adapter.schema.layout

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        info[STATE_KEY] = FieldRecord(self._adapter.state_vector(self.env, obs, info), self._layout)
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info[STATE_KEY] = FieldRecord(self._adapter.state_vector(self.env, obs, info), self._layout)
        return obs, reward, terminated, truncated, info


def stack_fields(per_env: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Batch per-environment fields into `[N]` / `[N, d]` float64 arrays (contiguous copies)."""
    if per_env and all(isinstance(fields, FieldRecord) for fields in per_env):
        rows = np.stack([fields.vector for fields in per_env])  # type: ignore[attr-defined]
        layout: dict[str, Slot] = per_env[0].layout  # type: ignore[attr-defined]
        return {name: np.ascontiguousarray(rows[:, slot]) for name, slot in layout.items()}
    return {name: np.array([fields[name] for fields in per_env], dtype=np.float64) for name in per_env[0]}


def batch_actions(actions: np.ndarray, action_space: gym.Space) -> np.ndarray:
    """Actions as the contract gives them: `[N]` ints for discrete spaces, `[N, d]` float64 otherwise."""
    if isinstance(action_space, gym.spaces.Discrete):
        return np.asarray(actions, dtype=np.int64).reshape(-1)
    return np.asarray(actions, dtype=np.float64).reshape(len(actions), -1)


def _rows(infos: Sequence[dict[str, Any]]) -> np.ndarray:
    """The `[N, D]` array of the environments' flat state vectors (`np.array` beats `np.stack`)."""
    return np.array([info[STATE_KEY].vector for info in infos])


def _well_formed(result: Any, n: int) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, float]] | None:
    """(total, components, component sums) when `result` plainly meets the contract, else None.

    The fast path for the common case: exact float64 `[n]` arrays under string keys, all finite
    (a sum is finite only if every value is). Anything else goes to `check_output`, which accepts
    the same results and names the error otherwise, so behaviour is the same, only faster.
    """
    if type(result) is not tuple or len(result) != 2:
        return None
    total, parts = result
    if type(parts) is not dict or not _plain(total, n):
        return None
    sums: dict[str, float] = {}
    grand = float(total.sum())
    for name, values in parts.items():
        if type(name) is not str or not _plain(values, n):
            return None
        sums[name] = float(values.sum())
        grand += sums[name]
    if not math.isfinite(grand):
        return None
    return total, dict(parts), sums


def _plain(values: Any, n: int) -> bool:
    return type(values) is np.ndarray and values.dtype == np.float64 and values.shape == (n,)


class ContractRewardVecEnv(VecEnvWrapper):
    """Replaces the environments' reward with the candidate's, checked on every step.

    Expects environments wrapped in `StateFieldsWrapper` (as `make_vec_env` builds them). Each
    step stacks the N state vectors once and hands the reward read-only views of the fields; the
    batch after a step is reused as the next step's `state` wherever no episode ended.
    """

    def __init__(self, venv: DummyVecEnv, reward_fn: RewardFn, filename: str) -> None:
        super().__init__(venv)
        self._reward_fn = reward_fn
        self._filename = filename
        self._actions: np.ndarray | None = None
        self._state: ReadOnlyFields = ReadOnlyFields()
        self._layout: dict[str, Slot] = {}
        self._discrete = isinstance(self.action_space, gym.spaces.Discrete)
        self.steps = 0
        self.component_sums: dict[str, float] = {}

    def _fields(self, rows: np.ndarray) -> ReadOnlyFields:
        return ReadOnlyFields.from_rows(rows, self._layout)

    def _call(self, action: np.ndarray, next_state: ReadOnlyFields) -> tuple[np.ndarray, dict[str, float]]:
        """One checked reward call; returns the total and each component's sum over the batch."""
        try:
            result = self._reward_fn(StateBatch(self._state), action, StateBatch(next_state))
        except RewardError:
            raise
        except Exception as exc:
            raise RewardError(
                exception_category(exc),
                f"{type(exc).__name__}: {exc}",
                step=self.steps,
                traceback=user_traceback(exc, self._filename),
            ) from None
        checked = _well_formed(result, self.num_envs)
        if checked is not None:
            return checked[0], checked[2]
        total, components = check_output(result, self.num_envs, self.steps)
        return total, {name: float(values.sum()) for name, values in components.items()}

    def reset(self) -> Any:
        obs = self.venv.reset()
        reset_infos = self.venv.reset_infos  # type: ignore[attr-defined]
        self._layout = reset_infos[0][STATE_KEY].layout
        self._state = self._fields(_rows(reset_infos))
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions
        self.venv.step_async(actions)

    def step_wait(self) -> Any:
        obs, _env_rewards, dones, infos = self.venv.step_wait()
        assert self._actions is not None
        next_rows = _rows(infos)
        next_state = self._fields(next_rows)
        if self._discrete:
            action = np.asarray(self._actions, dtype=np.int64).reshape(-1)
        else:
            action = np.asarray(self._actions, dtype=np.float64).reshape(self.num_envs, -1)
        self.steps += self.num_envs
        total, sums = self._call(action, next_state)
        running = self.component_sums
        for name, value in sums.items():
            running[name] = running.get(name, 0.0) + value
        if dones.any():
            # Where an episode ended, the next transition starts from the reset state.
            rows = next_rows.copy()
            reset_infos = self.venv.reset_infos  # type: ignore[attr-defined]
            for i in np.flatnonzero(dones):
                rows[i] = reset_infos[i][STATE_KEY].vector
            self._state = self._fields(rows)
        else:
            self._state = next_state
        return obs, total.astype(np.float32), dones, infos


def make_vec_env(adapter: TaskAdapter, n_envs: int, seed: int) -> DummyVecEnv:
    """N copies of the task, each exposing its state fields; seeded for reproducibility."""
    venv = DummyVecEnv([lambda: StateFieldsWrapper(adapter.make_env(), adapter) for _ in range(n_envs)])
    venv.seed(seed)
    return venv


def unwrap_reward_env(venv: VecEnv) -> ContractRewardVecEnv | None:
    """Find the contract wrapper inside a wrapper chain (e.g. under VecNormalize)."""
    current: Any = venv
    while current is not None:
        if isinstance(current, ContractRewardVecEnv):
            return current
        current = getattr(current, "venv", None)
    return None
