"""The JAX variants of the built-in tasks: the same ids, named state fields and fitness.

Each variant names a gymnax environment, says how its state becomes the task's named fields
(exactly the SB3 adapter's fields, in schema order), when an episode terminates, how the policy's
continuous output in [-1, 1] becomes the environment's action, and how long an episode is. The
fitness and success are not redefined: episodes recorded here are scored by the task's own
adapter (`rewardsmith.envs`), so both backends measure the same thing.

Brax's PPO learns continuous actions only (a tanh-squashed Gaussian). A discrete task's action is
therefore one continuous number per policy output cut into equal bins (CartPole: `a > 0` pushes
right); the reward contract still sees the task's own discrete action, as on the SB3 backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from rewardsmith.rl.jax.budgets import PPOConfig, jax_budget

FieldFn = Callable[..., dict[str, jax.Array]]


@dataclass(frozen=True)
class JaxTask:
    """One task's JAX variant: a gymnax environment, or a Brax environment on MJX."""

    id: str
    gymnax_id: str
    fields: FieldFn
    """The named state fields of one environment's state, from the gymnax state (or, for a
    Brax task, from the Brax `State` and whether it was just reset)."""
    terminated: Callable[[Any, Any, Any], jax.Array]
    """`terminated(env, state, params)`: the task's own termination, without the time limit
    (gymnax; a Brax environment reports its own `done`)."""
    episode_length: int
    policy_action_size: int
    to_env_action: Callable[[jax.Array], jax.Array]
    """Policy output `[action_size]` in [-1, 1] to the gymnax action of one environment."""
    contract_action: Callable[[jax.Array], jax.Array]
    """The gymnax action of a batch to the contract's `action`: `[N]` ints or `[N, d]` floats."""
    discrete: bool
    brax_id: str | None = None
    """Set for MJX tasks: the `brax.envs` environment, run with the `mjx` backend."""
    brax_kwargs: tuple[tuple[str, Any], ...] = ()
    brax_terminated: Callable[[dict[str, jax.Array]], jax.Array] | None = None
    """For MJX tasks that end when they fall: termination from the step's fields (Brax's own
    `done` is off, so that its reward pays for health as Gymnasium's does: `is_healthy`)."""

    @property
    def ppo(self) -> PPOConfig:
        """The task's Brax PPO settings (`budgets.py`, which the orchestrator reads without JAX)."""
        return jax_budget(self.id).ppo

    def make_batch_env(self) -> Any:
        """The batched environment the trainer and the rollouts step."""
        if self.brax_id is not None:
            from rewardsmith.rl.jax.brax_env import BraxBatchEnv

            return BraxBatchEnv(self)
        from rewardsmith.rl.jax.env import GymnaxBatchEnv

        return GymnaxBatchEnv(self)

    def make(self) -> tuple[Any, Any]:
        """The gymnax environment and its parameters, with its own time limit lifted (the
        episode length is applied by the trainer and the rollouts, as Brax does)."""
        import gymnax

        env, params = gymnax.make(self.gymnax_id)
        return env, params.replace(max_steps_in_episode=2**30)


def schema_names(task_id: str) -> tuple[str, ...]:
    """The task's field names in schema order (as the SB3 task defines them)."""
    from rewardsmith.envs import load_task

    return load_task(task_id).schema.names


def _bins(n: int) -> Callable[[jax.Array], jax.Array]:
    """[-1, 1] cut into `n` equal bins, numbered from 0."""

    def to_env_action(a: jax.Array) -> jax.Array:
        return jnp.clip(jnp.floor((a[0] + 1.0) * n / 2.0), 0, n - 1).astype(jnp.int32)

    return to_env_action


def _discrete_contract(action: jax.Array) -> jax.Array:
    return action.astype(jnp.int32).reshape(-1)


def _cartpole_fields(s: Any) -> dict[str, jax.Array]:
    return {
        "cart_position": s.x,
        "cart_velocity": s.x_dot,
        "pole_angle": s.theta,
        "pole_angular_velocity": s.theta_dot,
    }


def _scaled(scale: float) -> Callable[[jax.Array], jax.Array]:
    """[-1, 1] stretched to [-scale, scale] (the task's own action bounds)."""
    return lambda a: a * scale


def _continuous_contract(action: jax.Array) -> jax.Array:
    return action.astype(jnp.float32).reshape(action.shape[0], -1)


def _angle_normalize(angle: jax.Array) -> jax.Array:
    return ((angle + jnp.pi) % (2 * jnp.pi)) - jnp.pi


def _pendulum_fields(s: Any) -> dict[str, jax.Array]:
    return {"pole_angle": _angle_normalize(s.theta), "angular_velocity": s.theta_dot}


def _acrobot_fields(s: Any) -> dict[str, jax.Array]:
    a1, a2 = s.joint_angle1, s.joint_angle2
    return {
        "link1_angle": a1,
        "link2_angle": a2,
        "link1_angular_velocity": s.velocity_1,
        "link2_angular_velocity": s.velocity_2,
        "tip_height": -jnp.cos(a1) - jnp.cos(a2 + a1),
    }


def _mountaincar_fields(s: Any) -> dict[str, jax.Array]:
    return {"position": s.position, "velocity": s.velocity}


def _halfcheetah_fields(state: Any, after_reset: bool) -> dict[str, jax.Array]:
    """HalfCheetah's planar fields from a Brax MJX state. `x_velocity` is the velocity Brax's
    reward pays, `(x' - x) / dt` over the step; after a reset, the simulator's `qvel[0]`."""
    q, qd = state.pipeline_state.q, state.pipeline_state.qd
    velocity = qd[0] if after_reset else state.metrics["x_velocity"]
    return {
        "x_position": state.pipeline_state.x.pos[0, 0],
        "x_velocity": velocity,
        "torso_height": q[1],
        "torso_angle": q[2],
        "joint_angles": q[3:9],
        "joint_velocities": qd[3:9],
    }


def _planar_fields(
    n_joints: int, healthy: bool, clip_velocities: bool = False
) -> Callable[[Any, bool], dict[str, jax.Array]]:
    """A planar walker's fields from a Brax MJX state: the SB3 task's, with Brax's own x
    position, step velocity and torso height (the torso's world z)."""

    def fields(state: Any, after_reset: bool) -> dict[str, jax.Array]:
        pipeline = state.pipeline_state
        q, qd = pipeline.q, pipeline.qd
        joint_velocities = qd[3 : 3 + n_joints]
        if clip_velocities:
            joint_velocities = jnp.clip(joint_velocities, -10.0, 10.0)
        values = {
            "x_position": pipeline.x.pos[0, 0],
            "x_velocity": qd[0] if after_reset else state.metrics["x_velocity"],
            "torso_height": pipeline.x.pos[0, 2],
            "torso_angle": q[2],
            "joint_angles": q[3 : 3 + n_joints],
            "joint_velocities": joint_velocities,
        }
        if healthy:  # a reset state is healthy; after a step, Brax pays health only while healthy
            values["is_healthy"] = (
                jnp.ones(()) if after_reset else (state.metrics["reward_healthy"] > 0) * 1.0
            )
        return values

    return fields


def _spatial_fields(n_joints: int) -> Callable[[Any, bool], dict[str, jax.Array]]:
    """Ant's and Humanoid's fields from Gymnasium's model on MJX (`gymnasium_mjx.py`), as the SB3
    tasks read them from MuJoCo: the free joint's position and orientation, the step's velocity,
    and `cfrc_ext` of the 13 bodies (zeros after a reset, as in Gymnasium before its first step)."""

    def fields(state: Any, after_reset: bool) -> dict[str, jax.Array]:
        from rewardsmith.rl.jax.gymnasium_mjx import contact_forces

        pipeline = state.pipeline_state
        q, qd = pipeline.q, pipeline.qd
        return {
            "x_position": q[0],
            "y_position": q[1],
            "x_velocity": qd[0] if after_reset else state.metrics["x_velocity"],
            "y_velocity": qd[1] if after_reset else state.metrics["y_velocity"],
            "torso_height": q[2],
            "torso_orientation": q[3:7],
            "joint_angles": q[7 : 7 + n_joints],
            "joint_velocities": qd[6 : 6 + n_joints],
            "contact_forces": contact_forces(pipeline).ravel(),
            "is_healthy": jnp.ones(()) if after_reset else state.metrics["reward_survive"],
        }

    return fields


def _fell(fields: dict[str, jax.Array]) -> jax.Array:
    return fields["is_healthy"] < 0.5


def _own_termination(env: Any, s: Any, p: Any) -> jax.Array:
    return env.is_terminated(s, p)


TASKS: dict[str, JaxTask] = {
    "cartpole": JaxTask(
        id="cartpole",
        gymnax_id="CartPole-v1",
        fields=_cartpole_fields,
        terminated=_own_termination,
        episode_length=500,
        policy_action_size=1,
        to_env_action=_bins(2),
        contract_action=_discrete_contract,
        discrete=True,
    ),
    "pendulum": JaxTask(
        id="pendulum",
        gymnax_id="Pendulum-v1",
        fields=_pendulum_fields,
        terminated=_own_termination,  # never: Pendulum only ends at its time limit
        episode_length=200,
        policy_action_size=1,
        to_env_action=_scaled(2.0),
        contract_action=_continuous_contract,
        discrete=False,
    ),
    "acrobot": JaxTask(
        id="acrobot",
        gymnax_id="Acrobot-v1",
        fields=_acrobot_fields,
        terminated=_own_termination,
        episode_length=500,
        policy_action_size=1,
        to_env_action=_bins(3),
        contract_action=_discrete_contract,
        discrete=True,
    ),
    "mountaincar-continuous": JaxTask(
        id="mountaincar-continuous",
        gymnax_id="MountainCarContinuous-v0",
        fields=_mountaincar_fields,
        terminated=_own_termination,
        episode_length=999,
        policy_action_size=1,
        to_env_action=_scaled(1.0),
        contract_action=_continuous_contract,
        discrete=False,
    ),
    "halfcheetah": JaxTask(
        id="halfcheetah",
        gymnax_id="",
        brax_id="halfcheetah",
        fields=_halfcheetah_fields,
        terminated=_own_termination,
        episode_length=1000,
        policy_action_size=6,
        to_env_action=_scaled(1.0),
        contract_action=_continuous_contract,
        discrete=False,
    ),
    "ant": JaxTask(
        id="ant",
        gymnax_id="",
        brax_id="gymnasium-ant",  # Gymnasium's own model on MJX (brax_env.GYMNASIUM_MODELS)
        fields=_spatial_fields(8),
        terminated=_own_termination,
        episode_length=1000,
        policy_action_size=8,
        to_env_action=_scaled(1.0),
        contract_action=_continuous_contract,
        discrete=False,
    ),
    "humanoid": JaxTask(
        id="humanoid",
        gymnax_id="",
        brax_id="gymnasium-humanoid",
        fields=_spatial_fields(17),
        terminated=_own_termination,
        episode_length=1000,
        policy_action_size=17,
        to_env_action=_scaled(0.4),  # Humanoid-v5's actuators take [-0.4, 0.4]
        contract_action=_continuous_contract,
        discrete=False,
    ),
    "hopper": JaxTask(
        id="hopper",
        gymnax_id="",
        brax_id="hopper",
        brax_kwargs=(("terminate_when_unhealthy", False),),
        brax_terminated=_fell,
        fields=_planar_fields(3, healthy=True, clip_velocities=True),
        terminated=_own_termination,
        episode_length=1000,
        policy_action_size=3,
        to_env_action=_scaled(1.0),
        contract_action=_continuous_contract,
        discrete=False,
    ),
    "walker2d": JaxTask(
        id="walker2d",
        gymnax_id="",
        brax_id="walker2d",
        brax_kwargs=(("terminate_when_unhealthy", False),),
        brax_terminated=_fell,
        fields=_planar_fields(6, healthy=True),
        terminated=_own_termination,
        episode_length=1000,
        policy_action_size=6,
        to_env_action=_scaled(1.0),
        contract_action=_continuous_contract,
        discrete=False,
    ),
}


def jax_task(task_id: str) -> JaxTask:
    """The JAX variant of a built-in task; the KeyError names the tasks that have one."""
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(
            f"task {task_id!r} has no JAX variant; those with one: {sorted(TASKS)}"
        ) from None
