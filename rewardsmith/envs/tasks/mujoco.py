"""Gymnasium v5 MuJoCo locomotion tasks: HalfCheetah, Hopper, Walker2d, Ant, Humanoid."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import gymnasium as gym
import numpy as np

from rewardsmith.envs.adapter import Episode, TaskAdapter, TrainingDefaults
from rewardsmith.envs.obs_layout import FromInfo, FromObs, ObservationLayout
from rewardsmith.envs.schema import Field, StateSchema

# rl-baselines3-zoo's MuJoCo PPO settings (normalised observations), with a higher learning rate
# so that learning shows within the few hundred thousand steps a CPU can afford.
_MUJOCO_PPO = {
    "n_steps": 512,
    "batch_size": 64,
    "gamma": 0.98,
    "learning_rate": 1e-4,
    "ent_coef": 0.0004,
    "clip_range": 0.1,
    "n_epochs": 20,
    "gae_lambda": 0.92,
    "max_grad_norm": 0.8,
    "vf_coef": 0.58,
    "policy_kwargs": {
        "log_std_init": -2,
        "ortho_init": False,
        "activation_fn": "relu",
        "net_arch": {"pi": [256, 256], "vf": [256, 256]},
    },
}
_MUJOCO_SAC = {
    "learning_starts": 5_000,
    "batch_size": 256,
    "policy_kwargs": {"net_arch": [256, 256]},
}


def _training(steps: int, **ppo: Any) -> TrainingDefaults:
    return TrainingDefaults(
        algo="ppo",
        steps=steps,
        n_envs=1,
        normalize_obs=True,
        eval_episodes=3,
        hyperparams={"ppo": {**_MUJOCO_PPO, **ppo}, "sac": _MUJOCO_SAC},
    )


_X_POSITION = Field("x_position", "forward position of the torso", "m")
_X_VELOCITY = Field("x_velocity", "forward velocity of the torso over the last step", "m/s")
_HEALTHY = Field("is_healthy", "1.0 while the body is in its healthy range (not fallen), else 0.0")


class _Locomotion(TaskAdapter):
    """Shared field extraction: positions and velocities read from MuJoCo's `data`."""

    fitness_description = "distance travelled forward in the episode (m)"
    joint_slice: slice
    joint_velocity_slice: slice
    height_index: int
    planar: bool = True

    @cached_property
    def _slots(self) -> tuple[slice, slice, slice, slice | None, int | None]:
        """Where the simulator's arrays go in the flat state vector (from the schema's layout).

        Torso height, torso angle (planar) or orientation (spatial) and the joint angles are one
        contiguous run of `qpos`, so a single copy fills them.
        """
        layout = self.schema.layout
        joints = layout["joint_angles"]
        assert isinstance(joints, slice)
        body = slice(layout["torso_height"], joints.stop)
        qpos_body = slice(self.height_index, self.joint_slice.stop)
        forces = layout.get("contact_forces")
        healthy = layout.get("is_healthy")
        return body, qpos_body, layout["joint_velocities"], forces, healthy  # type: ignore[return-value]

    def state_vector(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        if self.obs_layout is not None:
            return self.obs_layout.row(obs, info)
        # This runs on every environment step, so it makes few numpy calls. The env reports the
        # x (and y) position and the velocity it rewarded (a finite difference over the step);
        # after a reset there is no velocity yet, so the simulator's stands in.
        body, qpos_body, joint_velocities, forces, healthy = self._slots
        base: Any = env.unwrapped
        data = base.data
        qpos, qvel = data.qpos, data.qvel
        vector = np.empty(self.schema.size)
        vector[0] = info.get("x_position", qpos[0])
        if self.planar:
            vector[1] = info.get("x_velocity", qvel[0])
        else:
            vector[1] = info.get("y_position", qpos[1])
            vector[2] = info.get("x_velocity", qvel[0])
            vector[3] = info.get("y_velocity", qvel[1])
        vector[body] = qpos[qpos_body]
        vector[joint_velocities] = qvel[self.joint_velocity_slice]
        if forces is not None:
            vector[forces] = data.cfrc_ext[1:].ravel()
        if healthy is not None:
            vector[healthy] = 1.0 if _is_healthy(base, info) else 0.0
        return vector

    def fitness(self, episode: Episode) -> float:
        x = episode.states["x_position"]
        return float(x[-1] - x[0])


def _is_healthy(base: Any, info: dict[str, Any]) -> bool:
    """The env's own healthiness test, read from the step it just took where possible.

    After a step the v5 envs report `reward_survive = is_healthy * healthy_reward` (computed on
    the same post-step state), which is exact and spares re-running `is_healthy`, the costliest
    part of the state on Hopper. After a reset, or with a zero healthy reward, ask the env.
    """
    survive = info.get("reward_survive")
    if survive is not None and base._healthy_reward != 0:
        return bool(survive != 0)
    return bool(base.is_healthy)


def _planar_obs_layout(schema: StateSchema, n_joints: int) -> ObservationLayout:
    """Every field of a planar task read from its observation and step info, for all N at once.

    The observation is qpos[1:] (torso height, torso angle, joint angles) then qvel (x, z and
    angle velocities, joint velocities); the info has the x position, the rewarded velocity and,
    where the task has `is_healthy`, the survival reward (1.0 exactly while healthy).
    """
    qvel = 2 + n_joints
    sources: list[FromObs | FromInfo] = [
        FromInfo("x_position", "x_position"),
        FromInfo("x_velocity", "x_velocity", fallback_index=qvel),  # qvel[0] after a reset
        FromObs("torso_height", (0,)),
        FromObs("torso_angle", (1,)),
        FromObs("joint_angles", tuple(range(2, 2 + n_joints))),
        FromObs("joint_velocities", tuple(range(qvel + 3, qvel + 3 + n_joints))),
    ]
    if "is_healthy" in schema.names:
        sources.append(FromInfo("is_healthy", "reward_survive", default=1.0))  # resets are healthy
    return ObservationLayout(schema, sources)


def _planar_fields(n_joints: int, healthy: bool, velocities_clipped: bool = False) -> StateSchema:
    velocity_meaning = "angular velocities of the leg joints" + (
        ", clipped to +-10 as in the observation" if velocities_clipped else ""
    )
    fields = [
        _X_POSITION,
        _X_VELOCITY,
        Field("torso_height", "height of the torso above the ground", "m"),
        Field("torso_angle", "pitch of the torso; 0 is its starting posture", "rad"),
        Field(
            "joint_angles", "angles of the leg joints (thigh, leg, foot, ...)", "rad", (n_joints,)
        ),
        Field("joint_velocities", velocity_meaning, "rad/s", (n_joints,)),
    ]
    if healthy:
        fields.append(_HEALTHY)
    return StateSchema(tuple(fields))


def _spatial_fields(n_joints: int, n_bodies: int) -> StateSchema:
    return StateSchema(
        (
            _X_POSITION,
            Field("y_position", "sideways position of the torso", "m"),
            _X_VELOCITY,
            Field("y_velocity", "sideways velocity of the torso over the last step", "m/s"),
            Field("torso_height", "height of the torso above the ground", "m"),
            Field("torso_orientation", "torso orientation quaternion (w, x, y, z)", "", (4,)),
            Field("joint_angles", "angles of the limb joints", "rad", (n_joints,)),
            Field(
                "joint_velocities", "angular velocities of the limb joints", "rad/s", (n_joints,)
            ),
            Field(
                "contact_forces",
                f"external contact forces and torques on the {n_bodies} bodies (6 per body)",
                "N, N m",
                (6 * n_bodies,),
            ),
            _HEALTHY,
        )
    )


class HalfCheetah(_Locomotion):
    """HalfCheetah-v5: never terminates; every field comes from the observation and step info."""

    id = "halfcheetah"
    env_id = "HalfCheetah-v5"
    goal = (
        "Make a two-legged planar cheetah robot run forward (to the right) as fast as possible, "
        "without wasting effort on large joint torques."
    )
    schema = _planar_fields(6, healthy=False)
    joint_slice, joint_velocity_slice, height_index = slice(3, 9), slice(3, 9), 1
    # Measured (seed 0, 200k steps, distance per 1000-step episode at 10 checkpoints): a constant
    # 1e-4 reached 249 m by 160k, then collapsed to 7 m by the end; rl-zoo's 2.06e-5 ended at 250
    # m, more slowly; decaying 1e-4 linearly to 0 learns fastest and ends at 264 m.
    training = _training(200_000, learning_rate="lin_1e-4")
    obs_layout = _planar_obs_layout(schema, 6)  # its observation is unclipped float64


class Hopper(_Locomotion):
    """Hopper-v5: ends when it falls; fields from the observation (joint velocities clipped)."""

    id = "hopper"
    env_id = "Hopper-v5"
    goal = (
        "Make a one-legged planar hopper robot hop forward (to the right) as fast as possible "
        "without falling over; the episode ends when it falls."
    )
    schema = _planar_fields(3, healthy=True, velocities_clipped=True)
    joint_slice, joint_velocity_slice, height_index = slice(3, 6), slice(3, 6), 1
    training = _training(300_000)
    # Its observation clips qvel to +-10, so do its joint velocities (the field says so).
    obs_layout = _planar_obs_layout(schema, 3)


class Walker2d(_Locomotion):
    """Walker2d-v5: ends when it falls; fields from the simulator (its observation clips qvel)."""

    id = "walker2d"
    env_id = "Walker2d-v5"
    goal = (
        "Make a two-legged planar walker robot walk forward (to the right) as fast as possible "
        "without falling; the episode ends when it falls."
    )
    schema = _planar_fields(6, healthy=True)
    joint_slice, joint_velocity_slice, height_index = slice(3, 9), slice(3, 9), 1
    training = _training(300_000)


class Ant(_Locomotion):
    """Ant-v5: spatial, with the contact forces of its 13 bodies; fields from the simulator."""

    id = "ant"
    env_id = "Ant-v5"
    goal = (
        "Make a four-legged ant robot walk forward along the x axis as fast as possible, "
        "without flipping over, with modest joint torques and ground impacts."
    )
    schema = _spatial_fields(8, 13)
    joint_slice, joint_velocity_slice, height_index, planar = slice(7, 15), slice(6, 14), 2, False
    training = _training(500_000)


class Humanoid(_Locomotion):
    """Humanoid-v5: spatial, with contact forces; ends when the torso drops too low."""

    id = "humanoid"
    env_id = "Humanoid-v5"
    goal = (
        "Make a 3D humanoid robot walk forward along the x axis as fast as possible without "
        "falling; the episode ends when its torso drops too low."
    )
    schema = _spatial_fields(17, 13)
    joint_slice, joint_velocity_slice, height_index, planar = slice(7, 24), slice(6, 23), 2, False
    training = _training(1_000_000)
