"""Apply a contract reward to vectorised environments through wrappers, never editing env code."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper
from typing_extensions import override

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.envs.schema import StateBatch
from rewardsmith.reward.call import RewardFn, call_reward, call_reward_batches
from rewardsmith.rl.state_fields import (
    STATE_KEY,
    StateFieldsWrapper,
    StateRows,
    batch_actions,
    stack_fields,
)

__all__ = [
    "STATE_KEY",
    "BatchReward",
    "ContractRewardVecEnv",
    "InProcessReward",
    "PendingSteps",
    "StateFieldsWrapper",
    "StateVecEnv",
    "batch_actions",
    "call_reward",
    "make_vec_env",
    "stack_fields",
]


class StateVecEnv(DummyVecEnv):
    """A `DummyVecEnv` that also gives the state batches of its environments.

    Two ways to the same values: where the adapter has an `obs_layout` the fields are gathered
    from the stacked observations and infos, for all N at once and only when read; otherwise
    each environment is wrapped in a `StateFieldsWrapper` that writes its own row into the
    shared `StateRows`.
    """

    def __init__(self, adapter: TaskAdapter, n_envs: int) -> None:
        self.layout = adapter.schema.layout
        self.obs_layout = adapter.obs_layout
        self.state_rows: StateRows | None = None
        if self.obs_layout is not None:
            super().__init__([adapter.make_env for _ in range(n_envs)])
        else:
            rows = self.state_rows = StateRows(n_envs, adapter.schema)
            super().__init__([partial(_wrapped_env, adapter, rows, i) for i in range(n_envs)])

    def _batch(self, rows: np.ndarray) -> StateBatch:
        return StateBatch.from_rows(rows, self.layout)

    def _observed(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> StateBatch:
        assert self.obs_layout is not None
        return StateBatch.from_source(self.layout, self.obs_layout.fields(obs, infos))

    def state_after_reset(self, obs: Any) -> StateBatch:
        """The states the environments start from after `reset()`."""
        if self.obs_layout is not None:
            return self._observed(obs, self.reset_infos)
        assert self.state_rows is not None
        return self._batch(self.state_rows.after_reset.copy())

    def states_after_step(
        self, obs: Any, dones: np.ndarray, infos: list[dict[str, Any]]
    ) -> tuple[StateBatch, StateBatch | None]:
        """The states a step reached and, if an episode ended, the states the next one starts from.

        The second is None when no episode ended (the next step then starts where this one
        ended). `obs` holds the reset observation where an episode ended.
        """
        if self.obs_layout is None:
            assert self.state_rows is not None
            reached = self.state_rows.after_step.copy()
            if not np.count_nonzero(dones):
                return self._batch(reached), None
            start = reached.copy()
            start[dones] = self.state_rows.after_reset[dones]
            return self._batch(reached), self._batch(start)
        if not np.count_nonzero(dones):
            return self._observed(obs, infos), None
        final_obs = np.array(obs)
        start_infos = list(infos)
        for i in np.flatnonzero(dones):
            final_obs[i] = infos[i]["terminal_observation"]
            start_infos[i] = self.reset_infos[i]
        return self._observed(final_obs, infos), self._observed(obs, start_infos)


def _wrapped_env(adapter: TaskAdapter, rows: StateRows, index: int) -> gym.Env:
    return StateFieldsWrapper(adapter.make_env(), adapter, rows, index)


class PendingSteps:
    """The vectorised steps whose rewards are not computed yet: states, actions, step numbers.

    The state batches are kept as the step made them (their arrays are copies nobody writes
    to), so a field the reward starts reading later can still be gathered for every step.
    """

    def __init__(self) -> None:
        self.states: list[StateBatch] = []
        self.next_states: list[StateBatch] = []
        self.action_rows: list[np.ndarray] = []
        self.steps: list[int] = []
        self.dones: list[np.ndarray] = []

    def __len__(self) -> int:
        return len(self.steps)

    def add(
        self,
        state: StateBatch,
        action: np.ndarray,
        next_state: StateBatch,
        step: int,
        dones: np.ndarray,
    ) -> None:
        """Keep one step; its batches as they are (nothing writes to them), `dones` as a copy."""
        self.states.append(state)
        self.action_rows.append(action)
        self.next_states.append(next_state)
        self.steps.append(step)
        self.dones.append(np.array(dones, dtype=bool))

    @property
    def actions(self) -> np.ndarray:
        """The kept actions as one `[T, N, ...]` array (a new one on every read)."""
        return np.stack(self.action_rows)

    def field(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Field `name` before and after each step, float64 `[T, N, ...]`."""
        before = np.stack([state[name] for state in self.states]).astype(np.float64, copy=False)
        after = np.stack([state[name] for state in self.next_states]).astype(np.float64, copy=False)
        return before, after


class BatchReward(Protocol):
    """A checked reward: state batches in, float64 `[N]` total and components out, or a
    RewardError. The worker's is a `RewardProcess` (the code runs in a process of its own).

    `totals` gives the totals `[T, N]` of T pending steps at once, or the RewardError of the
    reward that failed on them (never swallowed: a reward that fails on a batch fails)."""

    def __call__(
        self, state: StateBatch, action: np.ndarray, next_state: StateBatch, step: int | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One step's checked total and components, float64 `[N]` each."""
        ...

    def totals(self, transitions: PendingSteps) -> np.ndarray:
        """The totals `[T, N]` of the pending steps, or the RewardError of the failing call."""
        ...


class InProcessReward:
    """A loaded reward called in this process: for tests and benchmarks of the reward path, never
    for candidate code in training (see `rewardsmith.rl.reward_process`)."""

    def __init__(self, reward_fn: RewardFn, filename: str) -> None:
        self.reward_fn, self.filename = reward_fn, filename

    def __call__(
        self, state: StateBatch, action: np.ndarray, next_state: StateBatch, step: int | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """The reward called here, checked as `call_reward_batches` checks every call."""
        return call_reward_batches(self.reward_fn, state, action, next_state, step, self.filename)

    def totals(self, transitions: PendingSteps) -> np.ndarray:
        """One call per pending step, in order, so the first failing step raises."""
        rows = zip(
            transitions.states,
            transitions.action_rows,
            transitions.next_states,
            transitions.steps,
            strict=True,
        )
        return np.stack([self(*row)[0] for row in rows])


class ContractRewardVecEnv(VecEnvWrapper):
    """Replaces the environments' reward with the candidate's, checked on every step.

    Each step takes the state batch the `StateVecEnv` reached (read-only fields, gathered when
    read) and hands it to the reward as `next_state`; that batch is reused as the next step's
    `state` wherever no episode ended (where one did, the reset state is).

    With `defer=True` a step returns zero rewards and keeps the transition instead; the learner
    takes the real rewards of all pending steps at once with `take_totals()` when it needs them
    (PPO: at the end of each rollout, `rewardsmith.rl.sb3.deferred_rewards`): one exchange with
    the reward process per rollout instead of one per step, and there one call on all of its
    transitions (the contract's reward is a function of each transition).
    """

    def __init__(self, venv: StateVecEnv, reward: BatchReward, defer: bool = False) -> None:
        super().__init__(venv)
        self._states = venv
        self._reward = reward
        self._actions: np.ndarray | None = None
        self._state = StateBatch({})
        self.steps = 0
        self.pending: PendingSteps | None = PendingSteps() if defer else None

    @override
    def reset(self) -> Any:
        obs = self.venv.reset()
        self._state = self._states.state_after_reset(obs)
        return obs

    @override
    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions
        self.venv.step_async(actions)

    @override
    def step_wait(self) -> Any:
        obs, _env_rewards, dones, infos = self.venv.step_wait()
        assert self._actions is not None
        next_state, start = self._states.states_after_step(obs, dones, infos)
        action = batch_actions(self._actions, self.action_space)
        self.steps += self.num_envs
        if self.pending is not None:
            self.pending.add(self._state, action, next_state, self.steps, dones)
            rewards = np.zeros(self.num_envs, dtype=np.float32)
        else:
            rewards = self._reward(self._state, action, next_state, self.steps)[0]
        self._state = next_state if start is None else start
        return obs, rewards.astype(np.float32), dones, infos

    def take_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """The float32 rewards `[T, N]` of the steps taken since the last call, and where
        episodes ended `[T, N]`; raises the reward's RewardError where it failed on them."""
        pending, self.pending = self.pending, PendingSteps()
        if pending is None:
            raise RuntimeError("take_totals() needs a ContractRewardVecEnv made with defer=True")
        if not len(pending):
            return np.zeros((0, self.num_envs), np.float32), np.zeros((0, self.num_envs), bool)
        totals = self._reward.totals(pending)
        return totals.astype(np.float32), np.stack(pending.dones)


def make_vec_env(adapter: TaskAdapter, n_envs: int, seed: int) -> StateVecEnv:
    """N copies of the task, each exposing its state fields; seeded for reproducibility."""
    venv = StateVecEnv(adapter, n_envs)
    venv.seed(seed)
    return venv
