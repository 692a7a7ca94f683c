"""A Brax environment on MJX, batched, with the task's named fields kept beside its state.

Brax environments are written for one environment and vmapped; this wrapper vmaps them itself
(the reward, a `jax.export` function, is called once on the whole batch) and keeps each
environment's named fields in its pipeline state, next to Brax's own `State`, so that Brax's
auto-reset wrapper resets the fields with the rest. A field such as HalfCheetah's `x_velocity`
(the velocity over the step that the reward pays) needs the step, not just the state after it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from brax.envs.base import State
from typing_extensions import override

from rewardsmith.rl.jax.env import TaskBatchEnv
from rewardsmith.rl.jax.tasks import JaxTask, schema_names

# `brax_id`s of Gymnasium's own models on MJX (`gymnasium_mjx.py`), by class name there.
GYMNASIUM_MODELS = {"gymnasium-ant": "GymnasiumAnt", "gymnasium-humanoid": "GymnasiumHumanoid"}


def make_brax_env(task: JaxTask) -> Any:
    """One environment of an MJX task: one of Brax's, or a Gymnasium model on MJX."""
    assert task.brax_id is not None
    if task.brax_id in GYMNASIUM_MODELS:
        from rewardsmith.rl.jax import gymnasium_mjx

        return getattr(gymnasium_mjx, GYMNASIUM_MODELS[task.brax_id])()
    from brax import envs

    return envs.get_environment(task.brax_id, backend="mjx", **dict(task.brax_kwargs))


class BraxBatchEnv(TaskBatchEnv):
    """B environments of one Brax task on MJX; `done` is the environment's own termination."""

    def __init__(self, task: JaxTask) -> None:
        self.task = task
        self.env = make_brax_env(task)
        # The observation size without compiling a step (reading it from Brax compiles one).
        example = jax.eval_shape(self.env.reset, jax.random.PRNGKey(0))
        self._obs_size = int(example.obs.shape[-1])
        self.names = schema_names(task.id)

    def fields(self, pipeline_state: Any) -> dict[str, jax.Array]:
        """Each environment's fields, `[B]` float32, as the last reset or step stored them."""
        return {name: pipeline_state["fields"][name] for name in self.names}

    def _fields(self, inner: State, after_reset: bool) -> dict[str, jax.Array]:
        values = jax.vmap(partial(self.task.fields, after_reset=after_reset))(inner)
        return {name: jnp.asarray(values[name], jnp.float32) for name in self.names}

    @override
    def reset(self, rng: jax.Array) -> State:
        inner = jax.vmap(self.env.reset)(rng)
        zero = jnp.zeros(rng.shape[:-1], jnp.float32)
        wrapped = {"inner": inner, "fields": self._fields(inner, True)}
        return State(wrapped, inner.obs, zero, zero, {}, {})

    @override
    def step(self, state: State, action: jax.Array) -> State:
        inner = jax.vmap(self.env.step)(state.pipeline_state["inner"], self.env_action(action))
        fields = self._fields(inner, False)
        ended = self.task.brax_terminated
        done = inner.done if ended is None else ended(fields)
        return state.replace(
            pipeline_state={"inner": inner, "fields": fields},
            obs=inner.obs,
            reward=jnp.asarray(inner.reward, jnp.float32),
            done=jnp.asarray(done, jnp.float32),
        )

    @property
    @override
    def backend(self) -> str:
        return "mjx"
