"""Meta-World built-ins: named fields, human reward = Meta-World's own v3 reward, fitness = success
at any step, and `train` / `run` through the CLI.

Meta-World pins mujoco 3.3.0, so these run in an environment of their own (.ci/metaworld.sh);
elsewhere the module is skipped. Meta-World's scripted expert policies drive the episodes, so the
reward's branches that random actions never reach (pressing, closing, success) are checked too;
test_human_rewards.py checks the same rewards over random episodes and episode boundaries.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("metaworld")

from rewardsmith.cli import app
from rewardsmith.envs import list_tasks, load_task
from rewardsmith.envs.adapter import Episode, TaskAdapter
from rewardsmith.envs.tasks.metaworld import MetaWorldTask
from rewardsmith.reward.loader import RewardFn, load_reward
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

TASKS = [
    f"metaworld-{name}"
    for name in (
        "reach",
        "button-press",
        "drawer-close",
        "door-close",
        "door-unlock",
        "drawer-open",
        "handle-press",
        "handle-press-side",
        "window-close",
        "window-open",
        "sweep-into",
        "pick-place",
    )
]
TOLERANCE = 1e-6
runner = CliRunner()
WIDE = {"COLUMNS": "200"}

# The observation entries each field is, where the task has the field.
OBSERVED = {
    "hand_position": slice(0, 3),
    "gripper_opening": 3,
    "object_position": slice(4, 7),
    "object_quaternion": slice(7, 11),
    "previous_hand_position": slice(18, 21),
    "previous_gripper_opening": 21,
    "previous_object_position": slice(22, 25),
    "previous_object_quaternion": slice(25, 29),
    "goal_position": slice(36, 39),
}


def expert(task: str) -> Any:
    """Meta-World's scripted policy for the task, which solves it."""
    import metaworld.policies as policies

    words = task.removeprefix("metaworld-").split("-")
    return getattr(policies, "Sawyer" + "".join(w.title() for w in words) + "V3Policy")()


def load_kind(adapter: TaskAdapter, kind: str, tmp_path: Path) -> tuple[RewardFn, str]:
    path = tmp_path / f"{kind}.py"
    path.write_text(adapter.reward_source(kind) or "")  # type: ignore[arg-type]
    return load_reward(path), str(path)


def contract_reward(
    reward: RewardFn, path: str, env: Any, state: Any, action: Any, next_state: Any, step: int
) -> tuple[float, dict[str, Any]]:
    total, components = call_reward(
        reward,
        stack_fields([state]),
        batch_actions(np.asarray([action]), env.action_space),
        stack_fields([next_state]),
        step,
        path,
    )
    return float(total[0]), components


def test_the_metaworld_tasks_are_listed() -> None:
    assert set(TASKS) <= set(list_tasks())


@pytest.mark.parametrize("task", TASKS)
def test_fields_are_the_observation_and_the_simulator(task: str) -> None:
    adapter = load_task(task)
    assert isinstance(adapter, MetaWorldTask)
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    obs, info = env.reset(seed=2)
    env.action_space.seed(2)
    base: Any = env.unwrapped
    for _ in range(4):
        obs, _reward, _terminated, _truncated, info = env.step(env.action_space.sample())
    record = info[STATE_KEY]
    for name, entries in OBSERVED.items():
        if name in record:
            np.testing.assert_array_equal(record[name], obs[entries], err_msg=name)
    np.testing.assert_array_equal(record["tcp_center"], base.tcp_center)
    assert record["success"] == float(info["success"])
    assert np.all(obs[11:18] == 0.0), "a second object would need fields of its own"
    if "object_quaternion" not in record:
        assert np.all(obs[7:11] == 0.0), "an orientation the fields leave out"
    described = {f["name"]: f for f in adapter.describe()["fields"]}
    assert all(f["description"] for f in described.values())
    assert (
        described["tcp_center"]["units"] == "m" and described["goal_position"]["shape"] == "[N, 3]"
    )
    env.close()


@pytest.mark.parametrize("task", ["metaworld-sweep-into", "metaworld-pick-place"])
def test_the_initial_pads_the_grasp_rewards_read_are_the_pads_now(task: str) -> None:
    """Meta-World's grasp rewards take margins from `init_left_pad` / `init_right_pad`, views of
    the pads in the simulation: the pad fields carry them, as they are at every step."""
    adapter = load_task(task)
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    _obs, info = env.reset(seed=1)
    env.action_space.seed(1)
    at_reset = info[STATE_KEY]["left_pad_position"].copy()
    base: Any = env.unwrapped
    for _ in range(5):
        *_rest, info = env.step(env.action_space.sample())
    record = info[STATE_KEY]
    assert not np.array_equal(record["left_pad_position"], at_reset)
    for side in ("left", "right"):
        np.testing.assert_array_equal(
            record[f"{side}_pad_position"], getattr(base, f"init_{side}_pad"), err_msg=side
        )
    env.close()


@pytest.mark.parametrize("task", TASKS)
def test_reset_seeds_choose_the_goal(task: str) -> None:
    """Meta-World ignores reset's seed; the task makes it choose the goal variation (where the
    goal is, or, in sweep-into, whose hole stays put, where the puck starts)."""
    env = load_task(task).make_env()
    first, _ = env.reset(seed=5)
    again, _ = env.reset(seed=5)
    others = [env.reset(seed=seed)[0] for seed in range(6, 12)]
    np.testing.assert_array_equal(first, again)
    varied = slice(4, 7) if task == "metaworld-sweep-into" else slice(36, 39)
    assert any(not np.array_equal(first[varied], other[varied]) for other in others)
    env.close()


def test_environments_can_be_made_from_several_threads_at_once() -> None:
    """The loop's fan-out makes environments in threads; Meta-World seeds and draws numpy's
    global generator while making one, so unguarded threads repeat goals and fail its assert."""
    adapter = load_task("metaworld-reach")
    barrier = threading.Barrier(4)

    def make_and_reset(_: int) -> np.ndarray:
        barrier.wait()
        env = adapter.make_env()
        obs, _info = env.reset(seed=3)
        env.close()
        return np.asarray(obs)

    with ThreadPoolExecutor(4) as pool:
        observations = list(pool.map(make_and_reset, range(8)))
    for obs in observations[1:]:
        np.testing.assert_array_equal(obs, observations[0])


def test_goal_draws_are_made_once_per_process_and_are_metaworlds_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Meta-World draws its 50 goals anew for every environment (0.5 CPU-s each); with a seed the
    draw is kept for the process (envs/metaworld_compat.py). It must be the draw Meta-World makes,
    and environments made from it must run the same episodes."""
    import metaworld

    reach, button = load_task("metaworld-reach"), load_task("metaworld-button-press")
    reach.make_env().close()  # loads the suite, and the shared draw with it
    shared = metaworld._make_tasks
    shared.shared_draws.clear()  # other tests in this process drew before
    envs = [reach.make_env() for _ in range(3)]
    assert len(shared.shared_draws) == 1, "the same task and seed drew again"
    button.make_env().close()
    assert len(shared.shared_draws) == 2
    assert metaworld.MT1("reach-v3", seed=0).train_tasks != (
        metaworld.MT1("reach-v3", seed=1).train_tasks
    )
    kept = metaworld.MT1("reach-v3", seed=0).train_tasks

    monkeypatch.setattr(metaworld, "_make_tasks", shared.__wrapped__)
    assert metaworld.MT1("reach-v3", seed=0).train_tasks == kept
    own = reach.make_env()
    for seed in range(4):
        expected, _ = own.reset(seed=seed)
        for env in envs:
            np.testing.assert_array_equal(env.reset(seed=seed)[0], expected)
    action = np.full(4, 0.5, dtype=np.float32)
    np.testing.assert_array_equal(envs[0].step(action)[0], own.step(action)[0])
    for env in (*envs, own):
        env.close()


def expert_episode(
    adapter: TaskAdapter, seed: int, steps: int, wander_after_success: bool
) -> tuple[list[Any], list[Any], list[float], list[dict[str, Any]]]:
    """States, actions, env rewards and infos of the expert at work; with `wander_after_success`
    it drives the hand up and away from the first successful step on."""
    env = StateFieldsWrapper(adapter.make_env(max_episode_steps=steps), adapter)
    policy = expert(adapter.id)
    obs, info = env.reset(seed=seed)
    states, actions, rewards, infos = [info[STATE_KEY]], [], [], []
    done, succeeded = False, False
    while not done:
        action = np.asarray(policy.get_action(obs), dtype=np.float32)
        if wander_after_success and succeeded:
            action = np.array([0.0, -1.0, 1.0, -1.0], dtype=np.float32)
        obs, reward, terminated, truncated, info = env.step(action)
        states.append(info[STATE_KEY])
        actions.append(action)
        rewards.append(float(reward))
        infos.append(info)
        succeeded = succeeded or bool(info["success"])
        done = terminated or truncated
    env.close()
    return states, actions, rewards, infos


@pytest.mark.parametrize("task", TASKS)
def test_human_reward_is_metaworlds_own(task: str, tmp_path: Path) -> None:
    """Step by step along the expert's episode (reaching, pressing or closing, succeeding) and
    a random one, to 1e-6."""
    adapter = load_task(task)
    human, path = load_kind(adapter, "human", tmp_path)
    env = adapter.make_env()
    worst = 0.0
    for seed in (0, 1):
        states, actions, rewards, infos = expert_episode(adapter, seed, 150, False)
        assert any(info["success"] for info in infos), f"{task}: the expert should succeed"
        for step, action in enumerate(actions):
            total, components = contract_reward(
                human, path, env, states[step], action, states[step + 1], step
            )
            worst = max(worst, abs(total - rewards[step]))
            assert abs(total - rewards[step]) <= TOLERANCE, f"{task} seed {seed} step {step}"
            assert components
    env.close()
    print(f"{task}: largest difference {worst:.2e}")


def as_episode(states: list[Any], actions: list[Any], infos: list[dict[str, Any]]) -> Episode:
    return Episode(
        states=stack_fields(states),
        actions=np.asarray(actions),
        env_rewards=np.zeros(len(actions)),
        terminated=False,
        truncated=True,
    )


@pytest.mark.parametrize("task", TASKS)
def test_fitness_is_success_at_any_step(task: str, tmp_path: Path) -> None:
    adapter = load_task(task)
    sparse, path = load_kind(adapter, "sparse", tmp_path)
    env = adapter.make_env()
    states, actions, _rewards, infos = expert_episode(adapter, 3, 150, True)
    met = [bool(info["success"]) for info in infos]
    assert any(met), f"{task}: the expert should succeed"
    if task == "metaworld-reach":  # the hand leaves the goal: success at some step, not the last
        assert not met[-1]
    episode = as_episode(states, actions, infos)
    assert adapter.success(episode) is True and adapter.fitness(episode) == 1.0
    for step, action in enumerate(actions):
        total, _ = contract_reward(sparse, path, env, states[step], action, states[step + 1], step)
        assert total == (1.0 if met[step] else 0.0)

    idle = StateFieldsWrapper(adapter.make_env(max_episode_steps=30), adapter)
    _obs, info = idle.reset(seed=3)
    states, actions, infos = [info[STATE_KEY]], [], []
    for _ in range(30):
        action = np.zeros(4, dtype=np.float32)
        *_rest, info = idle.step(action)
        states.append(info[STATE_KEY])
        actions.append(action)
        infos.append(info)
    assert not any(info["success"] for info in infos)
    episode = as_episode(states, actions, infos)
    assert adapter.success(episode) is False and adapter.fitness(episode) == 0.0
    idle.close()
    env.close()


def test_tasks_show_names_the_fields() -> None:
    result = runner.invoke(app, ["tasks", "show", "metaworld-reach"], env=WIDE)
    assert result.exit_code == 0, result.output
    for text in ("Meta-World/MT1", "tcp_center", "goal_position", "gripper_opening", "sac"):
        assert text in result.output


@pytest.mark.parametrize("task", TASKS)
def test_sac_is_the_learner_and_halving_says_it_trains_fully(task: str) -> None:
    assert_sac_and_halving_trains_fully(task)


@pytest.mark.slow
def test_train_button_press_reports_a_success_rate(tmp_path: Path) -> None:
    assert_train_reports_success(tmp_path, "metaworld-button-press", {"reach", "press"})


@pytest.mark.slow
def test_run_reach_ends_with_an_evaluated_best(tmp_path: Path) -> None:
    args = ["run", "metaworld-reach", "--rounds", "1", "--samples", "2", "--steps", "300"]
    options = ["--eval-seeds", "1", "--parallel", "2", "--sandbox", "process", "--json"]
    result = runner.invoke(app, [*args, *options, "--runs-dir", str(tmp_path)], env=WIDE)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["best_fitness"] is not None and data["human_fitness"] is not None
    assert Path(data["best_reward_path"]).read_text().count("def compute_reward") == 1
