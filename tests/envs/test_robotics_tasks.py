"""Gymnasium-Robotics built-ins: goal-dictionary fields, human reward = the dense reward, fitness
= the environment's own success, and `train` / `run` through the CLI.

The dense-reward check over many steps and episode boundaries is in test_human_rewards.py (these
tasks are built-ins there too); here each task is checked on steps that reach the goal as well,
which random actions never do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("gymnasium_robotics")

from rewardsmith.cli import app
from rewardsmith.envs import list_tasks, load_task
from rewardsmith.envs.adapter import Episode, TaskAdapter
from rewardsmith.envs.goal_dict import key_offsets
from rewardsmith.envs.registry import unavailable_tasks
from rewardsmith.envs.suites import ROBOTICS, SuiteMissingError
from rewardsmith.reward.loader import load_reward
from rewardsmith.rl.sb3.vec_reward import (
    STATE_KEY,
    StateFieldsWrapper,
    batch_actions,
    call_reward,
    stack_fields,
)
from tests.envs.suite_checks import (
    assert_sac_and_halving_trains_fully,
    assert_train_reports_success,
)

TASKS = ["fetch-reach", "fetch-push", "fetch-pick-and-place", "hand-block-rotate-z"]

runner = CliRunner()
WIDE = {"COLUMNS": "200"}

# Each field's source in the raw goal dictionary: (key, positions inside its vector).
RAW_SOURCES: dict[str, dict[str, tuple[str, slice]]] = {
    "fetch-reach": {
        "gripper_position": ("observation", slice(0, 3)),
        "goal_position": ("desired_goal", slice(0, 3)),
        "finger_positions": ("observation", slice(3, 5)),
        "gripper_velocity": ("observation", slice(5, 8)),
        "finger_velocities": ("observation", slice(8, 10)),
    },
    "fetch-push": {
        "gripper_position": ("observation", slice(0, 3)),
        "object_position": ("observation", slice(3, 6)),
        "goal_position": ("desired_goal", slice(0, 3)),
        "object_relative_position": ("observation", slice(6, 9)),
        "finger_positions": ("observation", slice(9, 11)),
        "object_rotation": ("observation", slice(11, 14)),
        "object_velocity": ("observation", slice(14, 17)),
        "object_angular_velocity": ("observation", slice(17, 20)),
        "gripper_velocity": ("observation", slice(20, 23)),
        "finger_velocities": ("observation", slice(23, 25)),
    },
    "hand-block-rotate-z": {
        "hand_joint_angles": ("observation", slice(0, 24)),
        "hand_joint_velocities": ("observation", slice(24, 48)),
        "block_velocity": ("observation", slice(48, 51)),
        "block_angular_velocity": ("observation", slice(51, 54)),
        "block_position": ("achieved_goal", slice(0, 3)),
        "block_orientation": ("achieved_goal", slice(3, 7)),
        "target_orientation": ("desired_goal", slice(3, 7)),
    },
}
RAW_SOURCES["fetch-pick-and-place"] = RAW_SOURCES["fetch-push"]


def test_the_robotics_tasks_are_listed() -> None:
    assert set(TASKS) <= set(list_tasks())
    assert not any(task in ids for ids in unavailable_tasks().values() for task in TASKS)


@pytest.mark.parametrize("task", TASKS)
def test_fields_are_the_goal_dictionary_entries(task: str) -> None:
    """Each field is the documented entry of the raw dictionary (guards the flat offsets), and
    the flat observation is Gymnasium's flattening of it, in the order the layout assumes."""
    adapter = load_task(task)
    env = adapter.make_env()
    raw_space = env.env.observation_space  # under the flattening wrapper
    assert list(key_offsets(raw_space)) == ["achieved_goal", "desired_goal", "observation"]
    wrapped = StateFieldsWrapper(env, adapter)
    wrapped.reset(seed=1)
    wrapped.action_space.seed(1)
    for _ in range(5):
        *_rest, info = wrapped.step(wrapped.action_space.sample())
    raw = env.unwrapped._get_obs()  # type: ignore[attr-defined]
    record = info[STATE_KEY]
    for name, (key, within) in RAW_SOURCES[task].items():
        np.testing.assert_array_equal(record[name], raw[key][within], err_msg=f"{task}.{name}")
    assert record["is_success"] == float(info["is_success"])
    described = {f["name"]: f for f in adapter.describe()["fields"]}
    assert set(described) == {*RAW_SOURCES[task], "is_success"}
    assert all(f["description"] for f in described.values())
    env.close()


def goal_reached_episode(adapter: TaskAdapter, reach: bool, seed: int) -> tuple[Episode, Any]:
    """One whole episode of random actions; with `reach`, before its last step the target is
    moved onto what the episode achieved, so that step meets the goal. Also its last info."""
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    env.action_space.seed(seed)
    _obs, info = env.reset(seed=seed)
    base: Any = env.unwrapped
    last_step = env.spec.max_episode_steps - 1  # type: ignore[union-attr]
    states, actions, done = [info[STATE_KEY]], [], False
    while not done:
        if reach and len(actions) == last_step:
            base.goal = base._get_obs()["achieved_goal"].copy()
        action = env.action_space.sample() * (0.0 if reach else 1.0)
        _obs, _reward, terminated, truncated, info = env.step(action)
        states.append(info[STATE_KEY])
        actions.append(action)
        done = terminated or truncated
    episode = Episode(
        states=stack_fields(states),
        actions=np.asarray(actions),
        env_rewards=np.zeros(len(actions)),
        terminated=bool(terminated),
        truncated=bool(truncated),
    )
    env.close()
    return episode, info


@pytest.mark.parametrize("task", TASKS)
def test_success_fitness_is_the_environments_success(task: str, tmp_path: Path) -> None:
    adapter = load_task(task)
    sparse_path = tmp_path / "sparse.py"
    sparse_path.write_text(adapter.reward_source("sparse") or "")
    sparse = load_reward(sparse_path)
    for reach in (True, False):
        episode, last_info = goal_reached_episode(adapter, reach, seed=4)
        met = bool(last_info["is_success"])
        assert met is reach, f"{task}: the scripted episode should {'' if reach else 'not '}succeed"
        assert adapter.success(episode) is met
        assert adapter.fitness(episode) == (1.0 if met else 0.0)
        state = {name: values[-2:-1] for name, values in episode.states.items()}
        next_state = {name: values[-1:] for name, values in episode.states.items()}
        total, _parts = call_reward(
            sparse, state, episode.actions[-1:], next_state, 0, str(sparse_path)
        )
        assert total[0] == (1.0 if met else 0.0)


@pytest.mark.parametrize("task", TASKS)
def test_human_reward_is_the_dense_reward_on_goal_steps(task: str, tmp_path: Path) -> None:
    """On a step that meets the goal (the dense reward near 0) as on any other."""
    adapter = load_task(task)
    path = tmp_path / "human.py"
    path.write_text(adapter.reward_source("human") or "")
    human = load_reward(path)
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    _obs, info = env.reset(seed=7)
    base: Any = env.unwrapped
    env.action_space.seed(7)
    for step in range(12):
        if step % 3 == 2:
            base.goal = base._get_obs()["achieved_goal"].copy()
        state = info[STATE_KEY]
        action = env.action_space.sample()
        _obs, reward, _terminated, _truncated, info = env.step(action)
        total, components = call_reward(
            human,
            stack_fields([state]),
            batch_actions(np.asarray([action]), env.action_space),
            stack_fields([info[STATE_KEY]]),
            step,
            str(path),
        )
        assert abs(float(total[0]) - float(reward)) <= 1e-6, f"{task} step {step}"
        assert components
    env.close()


def test_a_missing_suite_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(type(ROBOTICS), "installed", lambda self: False)
    assert "fetch-reach" not in list_tasks()
    assert any("rewardsmith[robotics]" in hint for hint in unavailable_tasks())
    with pytest.raises(SuiteMissingError, match=r"rewardsmith\[robotics\]"):
        load_task("fetch-reach")
    result = runner.invoke(app, ["tasks", "show", "fetch-reach"], env=WIDE)
    assert result.exit_code == 1 and "rewardsmith[robotics]" in result.output
    assert "Traceback" not in result.output
    listing = runner.invoke(app, ["tasks"], env=WIDE)
    assert listing.exit_code == 0, listing.output
    table, _, missing = listing.output.partition("Not installed here:")
    assert "fetch-reach" not in table
    assert "fetch-reach" in missing and "rewardsmith[robotics]" in missing


def test_tasks_show_names_the_goal_fields() -> None:
    result = runner.invoke(app, ["tasks", "show", "fetch-reach"], env=WIDE)
    assert result.exit_code == 0, result.output
    for text in ("FetchReachDense-v4", "gripper_position", "goal_position", "m/step", "sac"):
        assert text in result.output


@pytest.mark.parametrize("task", TASKS)
def test_sac_is_the_learner_and_halving_says_it_trains_fully(task: str) -> None:
    assert_sac_and_halving_trains_fully(task)


@pytest.mark.slow
def test_train_fetch_reach_reports_a_success_rate(tmp_path: Path) -> None:
    assert_train_reports_success(tmp_path, "fetch-reach", {"distance"})


@pytest.mark.slow
def test_run_fetch_reach_ends_with_an_evaluated_best(tmp_path: Path) -> None:
    args = ["run", "fetch-reach", "--rounds", "1", "--samples", "2", "--steps", "300"]
    options = ["--eval-seeds", "1", "--parallel", "2", "--sandbox", "process", "--json"]
    result = runner.invoke(app, [*args, *options, "--runs-dir", str(tmp_path)], env=WIDE)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["best_fitness"] is not None and data["human_fitness"] is not None
    assert Path(data["best_reward_path"]).read_text().count("def compute_reward") == 1
