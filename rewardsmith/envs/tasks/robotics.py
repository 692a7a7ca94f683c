"""Gymnasium-Robotics manipulation tasks (the `robotics` extra): Fetch reach, push and
pick-and-place, and the Shadow hand rotating a block about its z axis.

Their observations are goal dictionaries (`observation`, `achieved_goal`, `desired_goal`), which
`TaskAdapter.make_env` flattens; every field is a run of that flat vector or the step info's
`is_success`, so training gathers the fields from the stacked observations. Each task runs the
environment's dense variant, whose reward is the human reward (`envs/rewards/<task>_human.py`,
checked against it in tests/envs/test_robotics_tasks.py). Fitness is success: these tasks are
reported as success rates, and the Fetch and hand environments never end an episode early, so
an episode succeeds if the goal is met when its time runs out (the `is_success` of its last step,
as the HER papers evaluate them). Nothing here imports the suite: describing a task works without it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from typing_extensions import override

from rewardsmith.envs.adapter import Episode, TaskAdapter, TrainingDefaults
from rewardsmith.envs.obs_layout import FromInfo, FromObs, ObservationLayout
from rewardsmith.envs.schema import Field, StateSchema

# Where a field comes from: a goal-dictionary entry and positions inside its vector.
GoalSource = tuple[Field, str, range]

# The control step of every Fetch environment: 20 substeps of 2 ms. Their velocities are
# reported multiplied by it, i.e. as the displacement over one step.
_FETCH_STEP_S = 0.04

_SUCCESS = Field(
    "is_success",
    "1.0 if the goal is met at this step (the environment's own test, info['is_success']), "
    "else 0.0; 0.0 right after a reset",
    "",
    reveals_outcome=True,
)


def goal_dict_layout(
    sizes: dict[str, int], sources: list[GoalSource]
) -> tuple[StateSchema, ObservationLayout]:
    """The schema of `sources` (plus `is_success`), and where each field lies in the flattened
    observation: the dictionary's entries follow one another in sorted key order, as
    Gymnasium's `Dict` space keeps and flattens them (tests check it against the environment)."""
    start, offsets = 0, {}
    for key in sorted(sizes):
        offsets[key] = start
        start += sizes[key]
    fields = [field for field, _key, _within in sources]
    gathers: list[FromObs | FromInfo] = [
        FromObs(field.name, tuple(offsets[key] + i for i in within))
        for field, key, within in sources
    ]
    schema = StateSchema((*fields, _SUCCESS))
    gathers.append(FromInfo("is_success", "is_success", default=0.0))
    return schema, ObservationLayout(schema, gathers)


def _sac(steps: int, **sac: Any) -> TrainingDefaults:
    """SAC, as Text2Reward and the HER baselines train these tasks (without HER: the reward is a
    contract function of the state, not the environment's relabelable `compute_reward`)."""
    hyperparams = {
        "learning_rate": 1e-3,
        "gamma": 0.95,
        "batch_size": 256,
        "tau": 0.05,
        "learning_starts": 1_000,
        # Every transition of a default budget fits (with room for --steps up to 200k); the
        # hand's 75-entry observations then take about 120 MB.
        "buffer_size": max(steps, 200_000),
        "policy_kwargs": {"net_arch": [256, 256]},
        **sac,
    }
    return TrainingDefaults(
        algo="sac",
        steps=steps,
        n_envs=1,
        normalize_obs=True,
        eval_episodes=10,
        hyperparams={"sac": hyperparams},
    )


class _GoalTask(TaskAdapter):
    """A goal-dictionary task scored by the environment's own success test at the episode's end."""

    @override
    def fitness(self, episode: Episode) -> float:
        return float(episode.states["is_success"][-1] > 0.5)

    @override
    def success(self, episode: Episode) -> bool:
        return bool(episode.states["is_success"][-1] > 0.5)


def _fetch_velocity(name: str, what: str, key: str, within: range) -> GoalSource:
    return (
        Field(name, f"{what}, times the {_FETCH_STEP_S:g} s control step", "m/step", (3,)),
        key,
        within,
    )


_GRIPPER_OPENING = Field(
    "finger_positions",
    "positions of the two gripper fingers along their slides; their sum is the gripper's opening",
    "m",
    (2,),
)
_FINGER_VELOCITIES = Field(
    "finger_velocities",
    f"velocities of the two gripper fingers, times the {_FETCH_STEP_S:g} s control step",
    "m/step",
    (2,),
)
_FETCH_FITNESS = (
    "1.0 if the goal is met at the episode's last step (info['is_success']), else 0.0; "
    "the mean over evaluation episodes is the success rate"
)
_FETCH_ACTION = (
    "Each action is 4 numbers in [-1, 1]: the gripper's desired displacement in x, y and z "
    "(scaled to at most 5 cm per step) and the fingers' opening (positive) or closing (negative)."
)

_REACH_SCHEMA, _REACH_LAYOUT = goal_dict_layout(
    {"achieved_goal": 3, "desired_goal": 3, "observation": 10},
    [
        (
            Field("gripper_position", "position of the gripper (world frame)", "m", (3,)),
            "achieved_goal",
            range(3),
        ),
        (
            Field("goal_position", "the target position for the gripper (world frame)", "m", (3,)),
            "desired_goal",
            range(3),
        ),
        (_GRIPPER_OPENING, "observation", range(3, 5)),
        _fetch_velocity("gripper_velocity", "gripper velocity", "observation", range(5, 8)),
        (_FINGER_VELOCITIES, "observation", range(8, 10)),
    ],
)


class FetchReach(_GoalTask):
    """FetchReachDense-v4: move the gripper to a target; the dense reward is minus the distance."""

    id = "fetch-reach"
    env_id = "FetchReachDense-v4"
    goal = (
        "Move the gripper of a 7-joint Fetch robot arm to a target position in the air above a "
        "table, within 5 cm, and hold it there until the 50-step episode ends. " + _FETCH_ACTION
    )
    schema, obs_layout = _REACH_SCHEMA, _REACH_LAYOUT
    fitness_description = _FETCH_FITNESS
    success_description = "the gripper was within 5 cm of the target at the episode's end"
    # Measured (seed 0, human reward): success rate 0.7 at 4k steps, 1.0 from 6k to 20k.
    training = replace(_sac(10_000), search_steps=8_000)


def _object_task_layout() -> tuple[StateSchema, ObservationLayout]:
    """The 25-entry observation of Fetch's push and pick-and-place (`generate_mujoco_observations`):
    gripper position, object position, object minus gripper, finger positions, object rotation,
    object velocity relative to the gripper, object angular velocity, gripper velocity, fingers'."""
    return goal_dict_layout(
        {"achieved_goal": 3, "desired_goal": 3, "observation": 25},
        [
            (
                Field("gripper_position", "position of the gripper (world frame)", "m", (3,)),
                "observation",
                range(3),
            ),
            (
                Field("object_position", "position of the block (world frame)", "m", (3,)),
                "achieved_goal",
                range(3),
            ),
            (
                Field("goal_position", "the target position for the block", "m", (3,)),
                "desired_goal",
                range(3),
            ),
            (
                Field(
                    "object_relative_position",
                    "block position minus gripper position",
                    "m",
                    (3,),
                ),
                "observation",
                range(6, 9),
            ),
            (_GRIPPER_OPENING, "observation", range(9, 11)),
            (
                Field(
                    "object_rotation",
                    "block orientation as xyz Euler angles (world frame)",
                    "rad",
                    (3,),
                ),
                "observation",
                range(11, 14),
            ),
            _fetch_velocity(
                "object_velocity",
                "block velocity relative to the gripper's",
                "observation",
                range(14, 17),
            ),
            (
                Field(
                    "object_angular_velocity",
                    f"block angular velocity, times the {_FETCH_STEP_S:g} s control step",
                    "rad/step",
                    (3,),
                ),
                "observation",
                range(17, 20),
            ),
            _fetch_velocity("gripper_velocity", "gripper velocity", "observation", range(20, 23)),
            (_FINGER_VELOCITIES, "observation", range(23, 25)),
        ],
    )


_OBJECT_SCHEMA, _OBJECT_LAYOUT = _object_task_layout()


class FetchPush(_GoalTask):
    """FetchPushDense-v4: push a block to a target on the table (fingers held closed)."""

    id = "fetch-push"
    env_id = "FetchPushDense-v4"
    goal = (
        "A 7-joint Fetch robot arm, its gripper held closed, must push a block across a table to "
        "a target position on the table, within 5 cm, and leave it there until the 50-step "
        "episode ends. " + _FETCH_ACTION + " (The finger command has no effect here.)"
    )
    schema, obs_layout = _OBJECT_SCHEMA, _OBJECT_LAYOUT
    fitness_description = _FETCH_FITNESS
    success_description = "the block was within 5 cm of the target at the episode's end"
    # rl-baselines3-zoo trains it with SAC and HER for 1M steps (3x512 networks, batch 2048);
    # a CPU budget affords a fifth of that with smaller networks. Not measured here yet.
    training = _sac(200_000)


class FetchPickAndPlace(_GoalTask):
    """FetchPickAndPlaceDense-v4: grasp a block and carry it to a target, often in the air."""

    id = "fetch-pick-and-place"
    env_id = "FetchPickAndPlaceDense-v4"
    goal = (
        "A 7-joint Fetch robot arm with a two-finger gripper must pick up a block from a table "
        "and move it to a target position, within 5 cm; half of the targets are in the air "
        "(up to 45 cm above the table), so the block must be grasped and lifted. Hold it at the "
        "target until the 50-step episode ends. " + _FETCH_ACTION
    )
    schema, obs_layout = _OBJECT_SCHEMA, _OBJECT_LAYOUT
    fitness_description = _FETCH_FITNESS
    success_description = "the block was within 5 cm of the target at the episode's end"
    training = _sac(200_000)  # as FetchPush: zoo's SAC+HER settings, scaled down; not measured


_HAND_JOINTS = 24

_HAND_SCHEMA, _HAND_LAYOUT = goal_dict_layout(
    {"achieved_goal": 7, "desired_goal": 7, "observation": 61},
    [
        (
            Field(
                "hand_joint_angles",
                "angles of the hand's 24 joints (wrist, then fingers and thumb)",
                "rad",
                (_HAND_JOINTS,),
            ),
            "observation",
            range(_HAND_JOINTS),
        ),
        (
            Field(
                "hand_joint_velocities",
                "angular velocities of the hand's 24 joints",
                "rad/s",
                (_HAND_JOINTS,),
            ),
            "observation",
            range(_HAND_JOINTS, 2 * _HAND_JOINTS),
        ),
        (
            Field("block_velocity", "linear velocity of the block (world frame)", "m/s", (3,)),
            "observation",
            range(48, 51),
        ),
        (
            Field(
                "block_angular_velocity",
                "angular velocity of the block (its own frame)",
                "rad/s",
                (3,),
            ),
            "observation",
            range(51, 54),
        ),
        (
            Field("block_position", "position of the block's centre (world frame)", "m", (3,)),
            "achieved_goal",
            range(3),
        ),
        (
            Field(
                "block_orientation",
                "orientation of the block as a unit quaternion (w, x, y, z)",
                "",
                (4,),
            ),
            "achieved_goal",
            range(3, 7),
        ),
        (
            Field(
                "target_orientation",
                "the orientation to turn the block to, a unit quaternion (w, x, y, z); it "
                "differs from the starting one by a rotation about the vertical z axis",
                "",
                (4,),
            ),
            "desired_goal",
            range(3, 7),
        ),
    ],
)


class HandBlockRotateZ(_GoalTask):
    """HandManipulateBlockRotateZDense-v1: turn a block in a Shadow hand's palm about z."""

    id = "hand-block-rotate-z"
    env_id = "HandManipulateBlockRotateZDense-v1"
    goal = (
        "A 24-joint Shadow Dexterous Hand, palm up, holds a cube. Turn the cube in the hand about "
        "the vertical axis until its orientation matches the target orientation (within 0.1 rad), "
        "without dropping it, and keep it there until the 100-step episode ends; the cube's "
        "position does not matter. Each action is 20 numbers in [-1, 1]: the target angles of the "
        "hand's 20 actuated joints, scaled to each joint's range."
    )
    schema, obs_layout = _HAND_SCHEMA, _HAND_LAYOUT
    fitness_description = (
        "1.0 if the cube's orientation is within 0.1 rad of the target at the episode's last "
        "step (info['is_success']), else 0.0; the mean over evaluation episodes is the success rate"
    )
    success_description = "the cube was turned to within 0.1 rad of the target at the episode's end"
    training = replace(_sac(200_000), eval_episodes=5)  # 100-step episodes
