"""Task files over goal-dictionary environments: `key` names an entry of the observation
dictionary, the fields read the flattened observation training sees, and mistakes are one line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gymnasium_robotics")

from rewardsmith.envs import load_task
from rewardsmith.envs.task_file import TaskFileError
from rewardsmith.rl.rollout import random_policy, rollout_episodes
from rewardsmith.rl.sb3.vec_reward import STATE_KEY, StateFieldsWrapper, make_vec_env

FETCH_REACH = """
env_id = "FetchReach-v4"
goal = "Move the gripper to the target."
human_reward = "human.py"

[fields.gripper_position]
key = "achieved_goal"
description = "gripper position"
units = "m"

[fields.goal_position]
key = "desired_goal"
description = "target position"
units = "m"

[fields.gripper_height]
key = "observation"
index = 2
description = "gripper height"
units = "m"

[fields.finger_positions]
key = "observation"
indices = [3, 4]
description = "finger positions"
units = "m"

[fields.is_success]
info_key = "is_success"
description = "1.0 when the gripper is within 5 cm of the target"
reveals_outcome = true

[fitness]
kind = "final"
field = "is_success"

[success]
kind = "fitness_at_least"
threshold = 1.0

[training]
algo = "sac"
steps = 1000
"""

HUMAN = """
import numpy as np


def compute_reward(state, action, next_state):
    offset = next_state.gripper_position - next_state.goal_position
    distance = -np.sqrt(np.sum(offset**2, axis=1))
    return distance, {"distance": distance}
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "human.py").write_text(HUMAN)
    path = tmp_path / "fetch.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_goal_dictionary_fields_read_their_entries(tmp_path: Path) -> None:
    adapter = load_task(task_file=write(tmp_path, FETCH_REACH))
    assert adapter.schema["gripper_position"].shape == (3,)
    assert adapter.schema["gripper_height"].shape == ()
    assert adapter.schema["finger_positions"].shape == (2,)
    assert adapter.obs_layout is not None  # gathered from stacked observations in training
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    env.reset(seed=0)
    env.action_space.seed(0)
    *_rest, info = env.step(env.action_space.sample())
    raw = env.unwrapped._get_obs()  # type: ignore[attr-defined]
    record = info[STATE_KEY]
    np.testing.assert_array_equal(record["gripper_position"], raw["achieved_goal"])
    np.testing.assert_array_equal(record["goal_position"], raw["desired_goal"])
    assert record["gripper_height"] == raw["observation"][2]
    np.testing.assert_array_equal(record["finger_positions"], raw["observation"][3:5])
    assert record["is_success"] == float(info["is_success"])
    env.close()


def test_goal_dictionary_task_file_rolls_out_and_vectorises(tmp_path: Path) -> None:
    adapter = load_task(task_file=write(tmp_path, FETCH_REACH))
    episodes = rollout_episodes(adapter, random_policy(adapter, 0), 2, seed=0)
    assert all(e.length == 50 for e in episodes)
    assert all(adapter.fitness(e) in (0.0, 1.0) for e in episodes)
    venv = make_vec_env(adapter, 2, seed=0)
    obs = venv.reset()
    assert obs.shape == (2, 16)
    state = venv.state_after_reset(obs)
    assert state.goal_position.shape == (2, 3)
    venv.close()


@pytest.mark.parametrize(
    ("edit", "key", "problem"),
    [
        (('key = "observation"\nindex = 2', "index = 2"), "gripper_height", "name one with key"),
        (('key = "desired_goal"', 'key = "goal"'), "goal_position.key", "no entry 'goal'"),
        (("index = 2", "index = 10"), "gripper_height.index", "'observation' has 10 entries"),
        (("indices = [3, 4]", "indices = [3, 12]"), "finger_positions.indices", "out of range"),
    ],
)
def test_goal_dictionary_mistakes_are_one_line(
    tmp_path: Path, edit: tuple[str, str], key: str, problem: str
) -> None:
    old, new = edit
    assert old in FETCH_REACH
    with pytest.raises(TaskFileError) as caught:
        load_task(task_file=write(tmp_path, FETCH_REACH.replace(old, new, 1)))
    assert key in caught.value.key and problem in str(caught.value)


def test_key_on_a_flat_observation_is_refused(tmp_path: Path) -> None:
    text = """
    env_id = "CartPole-v1"
    goal = "Keep the pole up."

    [fields.pole_angle]
    key = "observation"
    index = 2
    description = "pole angle"

    [fitness]
    kind = "episode_length"
    """
    with pytest.raises(TaskFileError, match="not a dictionary; remove key"):
        load_task(task_file=write(tmp_path, text))
