"""Gymnasium's own Ant-v5 and Humanoid-v5 on MJX: the same model files, rewards, resets and ends.

Brax ships an ant and a humanoid of its own (Brax's ant has 9 bodies against Gymnasium's 13, and
neither pays a contact cost), so the SB3 tasks' `contact_forces` field could not keep its shape or
meaning there. These environments load Gymnasium's model files into MJX instead and step them as
Gymnasium's `AntEnv` and `HumanoidEnv` do: five physics steps per action, the velocity over the
step (the torso's for the ant, the centre of mass's for the humanoid), health from the torso's
height, and the external contact forces (`cfrc_ext`) from MuJoCo's post-constraint pass, which
Gymnasium runs after every step too (`mujoco.mjx.rne_postconstraint`).

One difference: Gymnasium's humanoid uses MuJoCo's PGS solver, which MJX lacks; it runs here with
the Newton solver (same iteration limits), so its contact dynamics are close but not identical.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
from brax.envs.base import PipelineEnv, State
from typing_extensions import override

FRAME_SKIP = 5


def gymnasium_model(name: str) -> Any:
    """A MuJoCo model file shipped with Gymnasium, compiled."""
    import gymnasium
    import mujoco

    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets", name)
    return mujoco.MjModel.from_xml_path(path)


def contact_forces(pipeline_state: Any) -> jax.Array:
    """`cfrc_ext` of every body but the world, `[13, 6]` (zeros until a step has run)."""
    return pipeline_state._impl.cfrc_ext[1:]


class GymnasiumLocomotion(PipelineEnv):
    """What Ant-v5 and Humanoid-v5 share (`terminate_when_unhealthy`, default weights)."""

    xml: str
    healthy_z: tuple[float, float]

    def __init__(self) -> None:
        from brax.io import mjcf

        super().__init__(sys=mjcf.load_model(self.model()), backend="mjx", n_frames=FRAME_SKIP)

    def model(self) -> Any:
        """The compiled MuJoCo model, from Gymnasium's own `xml` file."""
        return gymnasium_model(self.xml)

    @override
    def reset(self, rng: jax.Array) -> State:
        q, qd = self.initial_state(rng)
        pipeline_state = self.pipeline_init(q, qd)
        zero = jnp.zeros(())
        metrics = {"x_velocity": zero, "y_velocity": zero, "reward_survive": zero}
        return State(pipeline_state, self._obs(pipeline_state), zero, zero, metrics)

    @override
    def step(self, state: State, action: jax.Array) -> State:
        from mujoco import mjx

        before = state.pipeline_state
        after = mjx.rne_postconstraint(self.sys, self.pipeline_step(before, action))
        velocity = (self.xy(after) - self.xy(before)) / self.dt
        healthy = self.healthy(after)
        reward = self.reward(velocity[0], healthy, action, after._impl.cfrc_ext)
        metrics = {
            "x_velocity": velocity[0],
            "y_velocity": velocity[1],
            "reward_survive": healthy,  # 1 while healthy: the SB3 task's `is_healthy`
        }
        return state.replace(
            pipeline_state=after,
            obs=self._obs(after),
            reward=reward,
            done=1.0 - healthy,
            metrics=metrics,
        )

    def healthy(self, pipeline_state: Any) -> jax.Array:
        """1.0 while the torso's height is strictly inside `healthy_z`, else 0.0 (float32: it is
        also the survival reward)."""
        low, high = self.healthy_z
        z = pipeline_state.q[2]
        return ((z > low) & (z < high)).astype(jnp.float32)

    def _obs(self, pipeline_state: Any) -> jax.Array:
        """qpos without x and y, qvel, contact forces (the policy's input, not the reward's)."""
        forces = jnp.clip(contact_forces(pipeline_state), -10.0, 10.0)
        return jnp.concatenate([pipeline_state.q[2:], pipeline_state.qd, forces.ravel()])

    def initial_state(self, rng: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Joint positions and velocities after a reset, with the Gymnasium env's reset noise."""
        raise NotImplementedError

    def xy(self, pipeline_state: Any) -> jax.Array:
        """The horizontal position whose change over a step is the rewarded velocity."""
        raise NotImplementedError

    def reward(
        self, x_velocity: jax.Array, healthy: jax.Array, action: jax.Array, cfrc_ext: jax.Array
    ) -> jax.Array:
        """The Gymnasium env's own reward for one step: the `env_reward` that rollouts record and
        that a candidate's reward replaces in training."""
        raise NotImplementedError


class GymnasiumAnt(GymnasiumLocomotion):
    """Ant-v5: forward velocity + 1 per healthy step - 0.5 |a|^2 - 5e-4 |clip(cfrc_ext, +-1)|^2."""

    xml, healthy_z = "ant.xml", (0.2, 1.0)

    @override
    def initial_state(self, rng: jax.Array) -> tuple[jax.Array, jax.Array]:
        noise_q, noise_qd = jax.random.split(rng)
        size_q, size_qd = (self.sys.q_size(),), (self.sys.qd_size(),)
        q = self.sys.init_q + jax.random.uniform(noise_q, size_q, minval=-0.1, maxval=0.1)
        return q, 0.1 * jax.random.normal(noise_qd, size_qd)

    @override
    def xy(self, pipeline_state: Any) -> jax.Array:
        return pipeline_state.x.pos[0, :2]  # the torso

    def healthy(self, pipeline_state: Any) -> jax.Array:
        """Also finite, and the height range is closed, as Gymnasium's ant has it."""
        q, qd = pipeline_state.q, pipeline_state.qd
        low, high = self.healthy_z
        finite = jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(qd))
        return (finite & (q[2] >= low) & (q[2] <= high)).astype(jnp.float32)

    @override
    def reward(
        self, x_velocity: jax.Array, healthy: jax.Array, action: jax.Array, cfrc_ext: jax.Array
    ) -> jax.Array:
        contact = 5e-4 * jnp.sum(jnp.square(jnp.clip(cfrc_ext, -1.0, 1.0)))
        return x_velocity + healthy - 0.5 * jnp.sum(jnp.square(action)) - contact


class GymnasiumHumanoid(GymnasiumLocomotion):
    """Humanoid-v5: 1.25 x centre-of-mass velocity + 5 per healthy step - 0.1 |a|^2 - the
    contact cost 5e-7 |cfrc_ext|^2, capped at 10."""

    xml, healthy_z = "humanoid.xml", (1.0, 2.0)

    @override
    def model(self) -> Any:
        import mujoco

        model = gymnasium_model(self.xml)
        model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON  # MJX has no PGS
        return model

    @override
    def initial_state(self, rng: jax.Array) -> tuple[jax.Array, jax.Array]:
        noise_q, noise_qd = jax.random.split(rng)
        size_q, size_qd = (self.sys.q_size(),), (self.sys.qd_size(),)
        q = self.sys.init_q + jax.random.uniform(noise_q, size_q, minval=-1e-2, maxval=1e-2)
        return q, jax.random.uniform(noise_qd, size_qd, minval=-1e-2, maxval=1e-2)

    @override
    def xy(self, pipeline_state: Any) -> jax.Array:
        mass = jnp.asarray(self.sys.body_mass)
        return (mass @ pipeline_state.xipos / jnp.sum(mass))[:2]  # the centre of mass

    @override
    def reward(
        self, x_velocity: jax.Array, healthy: jax.Array, action: jax.Array, cfrc_ext: jax.Array
    ) -> jax.Array:
        contact = jnp.minimum(5e-7 * jnp.sum(jnp.square(cfrc_ext)), 10.0)
        return 1.25 * x_velocity + 5.0 * healthy - 0.1 * jnp.sum(jnp.square(action)) - contact
