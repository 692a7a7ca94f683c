"""Apply a contract reward to vectorised environments through wrappers, never by editing env code."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecEnvWrapper

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.reward.call import call_reward
from rewardsmith.reward.loader import RewardFn

__all__ = ["STATE_KEY", "ContractRewardVecEnv", "call_reward", "make_vec_env"]

STATE_KEY = "state_fields"


class StateFieldsWrapper(gym.Wrapper):
    """Puts the adapter's named state fields into `info` after every reset and step."""

    def __init__(self, env: gym.Env, adapter: TaskAdapter) -> None:
        super().__init__(env)
        self._adapter = adapter

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        info[STATE_KEY] = self._adapter.state_fields(self.env, obs, info)
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info[STATE_KEY] = self._adapter.state_fields(self.env, obs, info)
        return obs, reward, terminated, truncated, info


def stack_fields(per_env: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Batch per-environment field dicts into `[N]` / `[N, d]` float64 arrays."""
    return {name: np.array([fields[name] for fields in per_env], dtype=np.float64) for name in per_env[0]}


def batch_actions(actions: np.ndarray, action_space: gym.Space) -> np.ndarray:
    """Actions as the contract gives them: `[N]` ints for discrete spaces, `[N, d]` float64 otherwise."""
    if isinstance(action_space, gym.spaces.Discrete):
        return np.asarray(actions, dtype=np.int64).reshape(-1)
    return np.asarray(actions, dtype=np.float64).reshape(len(actions), -1)


class ContractRewardVecEnv(VecEnvWrapper):
    """Replaces the environments' reward with the candidate's, checked on every step."""

    def __init__(self, venv: DummyVecEnv, reward_fn: RewardFn, filename: str) -> None:
        super().__init__(venv)
        self._reward_fn = reward_fn
        self._filename = filename
        self._actions: np.ndarray | None = None
        self._state: dict[str, np.ndarray] = {}
        self.steps = 0
        self.component_sums: dict[str, float] = {}

    def reset(self) -> Any:
        obs = self.venv.reset()
        self._state = stack_fields([info[STATE_KEY] for info in self.venv.reset_infos])
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions
        self.venv.step_async(actions)

    def step_wait(self) -> Any:
        obs, _env_rewards, dones, infos = self.venv.step_wait()
        assert self._actions is not None
        next_state = stack_fields([info[STATE_KEY] for info in infos])
        action = batch_actions(self._actions, self.action_space)
        self.steps += self.num_envs
        total, components = call_reward(
            self._reward_fn, self._state, action, next_state, self.steps, self._filename
        )
        for name, values in components.items():
            self.component_sums[name] = self.component_sums.get(name, 0.0) + float(values.sum())
        if dones.any():
            reset_infos = self.venv.reset_infos
            self._state = stack_fields(
                [reset_infos[i][STATE_KEY] if done else infos[i][STATE_KEY] for i, done in enumerate(dones)]
            )
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
