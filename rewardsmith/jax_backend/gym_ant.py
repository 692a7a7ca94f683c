"""Gymnasium's own Ant-v5 on MJX: the same model file, reward, reset and episode end.

Brax ships an ant of its own (9 bodies against Gymnasium's 13, and no contact cost), so the SB3
task's `contact_forces` field could not keep its shape or meaning there. This environment loads
Gymnasium's `ant.xml` into MJX instead and steps it as Gymnasium's `AntEnv` does: five physics
steps per action, the torso's velocity over the step, health from the torso's height, and the
external contact forces (`cfrc_ext`) from MuJoCo's post-constraint pass, which Gymnasium runs
after every step too (`mujoco.mjx.rne_postconstraint`).
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
from brax.envs.base import PipelineEnv, State

FRAME_SKIP = 5
HEALTHY_Z = (0.2, 1.0)
RESET_NOISE = 0.1
CTRL_COST, CONTACT_COST, CONTACT_RANGE = 0.5, 5e-4, 1.0


def gymnasium_model(name: str) -> Any:
    """A MuJoCo model file shipped with Gymnasium, compiled."""
    import gymnasium
    import mujoco

    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name)
    return mujoco.MjModel.from_xml_path(path)


def contact_forces(pipeline_state: Any) -> jax.Array:
    """`cfrc_ext` of every body but the world, `[13, 6]` (zeros until a step has run)."""
    return pipeline_state._impl.cfrc_ext[1:]


class GymnasiumAnt(PipelineEnv):
    """Ant-v5 (`terminate_when_unhealthy`, default weights) on the MJX pipeline."""

    def __init__(self) -> None:
        from brax.io import mjcf

        sys = mjcf.load_model(gymnasium_model("ant.xml"))
        super().__init__(sys=sys, backend="mjx", n_frames=FRAME_SKIP)

    def reset(self, rng: jax.Array) -> State:
        noise_q, noise_qd = jax.random.split(rng)
        q = self.sys.init_q + jax.random.uniform(
            noise_q, (self.sys.q_size(),), minval=-RESET_NOISE, maxval=RESET_NOISE
        )
        qd = RESET_NOISE * jax.random.normal(noise_qd, (self.sys.qd_size(),))
        pipeline_state = self.pipeline_init(q, qd)
        zero = jnp.zeros(())
        metrics = {"x_velocity": zero, "y_velocity": zero, "reward_survive": zero}
        return State(pipeline_state, self._obs(pipeline_state), zero, zero, metrics)

    def step(self, state: State, action: jax.Array) -> State:
        from mujoco import mjx

        before = state.pipeline_state
        after = mjx.rne_postconstraint(self.sys, self.pipeline_step(before, action))
        velocity = (after.x.pos[0, :2] - before.x.pos[0, :2]) / self.dt
        healthy = self._healthy(after)
        forces = jnp.clip(after._impl.cfrc_ext, -CONTACT_RANGE, CONTACT_RANGE)
        reward = (
            velocity[0]
            + healthy
            - CTRL_COST * jnp.sum(jnp.square(action))
            - CONTACT_COST * jnp.sum(jnp.square(forces))
        )
        metrics = {"x_velocity": velocity[0], "y_velocity": velocity[1], "reward_survive": healthy}
        return state.replace(
            pipeline_state=after,
            obs=self._obs(after),
            reward=reward,
            done=1.0 - healthy,
            metrics=metrics,
        )

    def _healthy(self, pipeline_state: Any) -> jax.Array:
        q, qd = pipeline_state.q, pipeline_state.qd
        finite = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(qd))
        low, high = HEALTHY_Z
        return (finite & (q[2] >= low) & (q[2] <= high)).astype(jnp.float32)

    def _obs(self, pipeline_state: Any) -> jax.Array:
        """Gymnasium's observation: qpos without x and y, qvel, clipped contact forces."""
        forces = jnp.clip(contact_forces(pipeline_state), -CONTACT_RANGE, CONTACT_RANGE)
        return jnp.concatenate([pipeline_state.q[2:], pipeline_state.qd, forces.ravel()])
