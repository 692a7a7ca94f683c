"""A gymnax task as a batched Brax environment, with the candidate reward applied by a wrapper.

The environment is batched itself (`reset` takes `[B, 2]` keys, `step` `[B, action]` actions), so
the reward, a deserialised `jax.export` function with a symbolic batch size, is called once per
step on the whole batch; Brax's episode and auto-reset wrappers work on batched states as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from brax.envs.base import Env, State
from brax.envs.wrappers.training import AutoResetWrapper, EpisodeWrapper
from typing_extensions import override

from rewardsmith.rl.jax.tasks import JaxTask, schema_names

# (fields, contract action, next fields) -> (total [B], {name: [B]})
BatchReward = Callable[[dict[str, jax.Array], jax.Array, dict[str, jax.Array]], Any]


class TaskBatchEnv(Env):
    """What every batched task environment shares: the task, its field names in schema order
    (vmap returns dicts sorted), the policy-to-environment action map and the sizes."""

    task: JaxTask
    names: tuple[str, ...]
    _obs_size: int

    def env_action(self, action: jax.Array) -> jax.Array:
        """Policy outputs `[B, policy_action_size]` in [-1, 1] to the environments' own actions."""
        return jax.vmap(self.task.to_env_action)(action)

    @property
    @override
    def observation_size(self) -> int:
        return self._obs_size

    @property
    @override
    def action_size(self) -> int:
        return self.task.policy_action_size


class GymnaxBatchEnv(TaskBatchEnv):
    """B environments of one gymnax task; `done` is the task's own termination (no time limit)."""

    def __init__(self, task: JaxTask) -> None:
        self.task = task
        self.env, self.params = task.make()
        obs_shape = self.env.observation_space(self.params).shape
        self._obs_size = int(obs_shape[0])
        self.names = schema_names(task.id)

    def fields(self, states: Any) -> dict[str, jax.Array]:
        """The named state fields of a batch of gymnax states, `[B]` float32 each."""
        values = jax.vmap(self.task.fields)(states)
        return {name: jnp.asarray(values[name], jnp.float32) for name in self.names}

    @override
    def reset(self, rng: jax.Array) -> State:
        obs, states = jax.vmap(self.env.reset_env, in_axes=(0, None))(rng, self.params)
        zero = jnp.zeros(rng.shape[:-1], jnp.float32)
        return State(states, jnp.asarray(obs, jnp.float32), zero, zero, {}, {})

    @override
    def step(self, state: State, action: jax.Array) -> State:
        env_action = self.env_action(action)
        # Classic-control dynamics are deterministic: the key is never read.
        keys = jnp.zeros((env_action.shape[0], 2), jnp.uint32)
        obs, states, reward, _, _ = jax.vmap(self.env.step_env, in_axes=(0, 0, 0, None))(
            keys, state.pipeline_state, env_action, self.params
        )
        done = jax.vmap(self.task.terminated, in_axes=(None, 0, None))(
            self.env, states, self.params
        )
        return state.replace(
            pipeline_state=states,
            obs=jnp.asarray(obs, jnp.float32),
            reward=jnp.asarray(reward, jnp.float32),
            done=jnp.asarray(done, jnp.float32),
        )

    @property
    @override
    def backend(self) -> str:
        return "gymnax"


class ContractReward(Env):
    """Replaces the environment's reward with the candidate's (the contract's `total`)."""

    def __init__(self, env: Any, reward: BatchReward) -> None:
        self.env, self.reward = env, reward

    @override
    def reset(self, rng: jax.Array) -> State:
        return self.env.reset(rng)

    @override
    def step(self, state: State, action: jax.Array) -> State:
        before = self.env.fields(state.pipeline_state)
        after = self.env.step(state, action)
        contract_action = self.env.task.contract_action(self.env.env_action(action))
        total, _ = self.reward(before, contract_action, self.env.fields(after.pipeline_state))
        return after.replace(reward=jnp.asarray(total, jnp.float32))

    @property
    @override
    def observation_size(self) -> int:
        return self.env.observation_size

    @property
    @override
    def action_size(self) -> int:
        return self.env.action_size

    @property
    @override
    def backend(self) -> str:
        return self.env.backend

    @property
    @override
    def unwrapped(self) -> Env:
        unwrapped: Env = self.env
        return unwrapped


def wrap_batched(
    env: Env, episode_length: int, action_repeat: int = 1, randomization_fn: Any = None
) -> Env:
    """Brax's training wrappers minus the vmap (the environment is batched already)."""
    return AutoResetWrapper(EpisodeWrapper(env, episode_length, action_repeat))
