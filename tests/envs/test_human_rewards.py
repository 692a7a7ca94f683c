"""Every task's human reward, rewritten in the contract form, reproduces the environment's reward.

Random-policy rollouts cross several episode boundaries (the time limit is shortened for that), and
the contract reward must match the environment's own float64 reward within 1e-6 at every step:
once stepping one environment and calling the reward per transition, and once through the
vectorised training wrappers, where the `state` after an episode ends must be the reset state.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from rewardsmith.envs import list_tasks, load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.reward.loader import RewardFn, load_reward
from rewardsmith.rl.sb3.vec_reward import (
    STATE_KEY,
    ContractRewardVecEnv,
    InProcessReward,
    StateFieldsWrapper,
    batch_actions,
    call_reward,
    make_vec_env,
    stack_fields,
)

EXAMPLES = Path(__file__).parents[2] / "rewardsmith" / "envs" / "examples"
TOLERANCE = 1e-6
EPISODE_LIMIT = 120  # shortened time limit, so every rollout crosses episode boundaries
STEPS = 360
VEC_STEPS = 150
N_ENVS = 4

# Tasks whose contract reward we check: the built-ins and the example task file with a human reward.
TASKS = [*list_tasks(), "file:reacher_task.toml"]
# Every shipped example task file has a sparse reward (the other end of the human-normalised score).
SPARSE_TASKS = [*list_tasks(), *(f"file:{p.name}" for p in sorted(EXAMPLES.glob("*_task.toml")))]


def adapter_for(task: str) -> TaskAdapter:
    if task.startswith("file:"):
        return load_task(task_file=EXAMPLES / task.removeprefix("file:"))
    return load_task(task)


def short_env(adapter: TaskAdapter) -> gym.Env:
    # Through the adapter's class (a test may replace the instance's make_env with one that
    # calls this), so goal-dictionary tasks get their flattened observation too.
    return type(adapter).make_env(adapter, max_episode_steps=EPISODE_LIMIT)


def load_kind(adapter: TaskAdapter, kind: str, tmp_path: Path) -> tuple[RewardFn, str]:
    source = adapter.reward_source(kind)  # type: ignore[arg-type]
    assert source is not None, f"{adapter.id} has no {kind} reward"
    path = tmp_path / f"{adapter.id}_{kind}.py"
    path.write_text(source)
    return load_reward(path), str(path)


class RecordEnvReward(gym.Wrapper):
    """Keeps the environment's float64 reward in `info` (SB3's buffers hold float32)."""

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info["env_reward_f64"] = float(reward)
        return obs, reward, terminated, truncated, info


def lunar_heuristic(env: gym.Env) -> Callable[[np.ndarray], int]:
    """Gymnasium's scripted lander: it lands, which random actions never do (the +100 branch)."""
    from gymnasium.envs.box2d.lunar_lander import heuristic

    return lambda obs: int(heuristic(env.unwrapped, obs))


def single_env_errors(
    adapter: TaskAdapter, reward_fn: RewardFn, filename: str, seed: int, scripted: bool = False
) -> tuple[np.ndarray, int]:
    """Per-transition |contract - env| over a rollout; also how many episodes ended."""
    env = StateFieldsWrapper(short_env(adapter), adapter)
    env.action_space.seed(seed)
    obs, info = env.reset(seed=seed)
    policy = lunar_heuristic(env) if scripted else (lambda _obs: env.action_space.sample())
    state, errors, episodes = info[STATE_KEY], [], 0
    for step in range(STEPS):
        action = policy(obs)
        obs, env_reward, terminated, truncated, info = env.step(action)
        next_state = info[STATE_KEY]
        total, components = call_reward(
            reward_fn,
            stack_fields([state]),
            batch_actions(np.asarray([action]), env.action_space),
            stack_fields([next_state]),
            step,
            filename,
        )
        assert total.dtype == np.float64 and total.shape == (1,)
        assert components, "the human reward must name its components"
        errors.append(abs(float(total[0]) - float(env_reward)))
        if terminated or truncated:
            episodes += 1
            obs, info = env.reset()
            next_state = info[STATE_KEY]
        state = next_state
    env.close()
    return np.asarray(errors), episodes


@pytest.mark.parametrize("task", TASKS)
def test_human_reward_matches_env_reward_stepping_one_env(task: str, tmp_path: Path) -> None:
    adapter = adapter_for(task)
    reward_fn, filename = load_kind(adapter, "human", tmp_path)
    errors, episodes = single_env_errors(adapter, reward_fn, filename, seed=3)
    assert episodes >= 2, "the rollout should cross episode boundaries"
    worst = int(np.argmax(errors))
    assert errors.max() <= TOLERANCE, f"{task}: off by {errors[worst]:.3g} at step {worst}"


def test_lunarlander_landing_reward_matches(tmp_path: Path) -> None:
    """The rare branches of LunarLander's reward: coming to rest (+100) after a scripted landing."""
    adapter = load_task("lunarlander")
    reward_fn, filename = load_kind(adapter, "human", tmp_path)
    errors, episodes = single_env_errors(adapter, reward_fn, filename, seed=0, scripted=True)
    assert episodes >= 1
    assert errors.max() <= TOLERANCE


@pytest.mark.parametrize("task", TASKS)
def test_human_reward_matches_through_vec_wrappers(task: str, tmp_path: Path) -> None:
    adapter = adapter_for(task)
    reward_fn, filename = load_kind(adapter, "human", tmp_path)
    totals: list[np.ndarray] = []

    def recording(state: Any, action: Any, next_state: Any) -> Any:
        result = reward_fn(state, action, next_state)
        totals.append(np.array(result[0], dtype=np.float64))
        return result

    # The training wrappers over short-limit environments that report their float64 reward.
    adapter.make_env = lambda: RecordEnvReward(short_env(adapter))  # type: ignore[method-assign]
    env = ContractRewardVecEnv(
        make_vec_env(adapter, N_ENVS, seed=5), InProcessReward(recording, filename)
    )
    env.reset()
    env.action_space.seed(5)
    ended = 0
    for step in range(VEC_STEPS):
        actions = np.stack([env.action_space.sample() for _ in range(N_ENVS)])
        _obs, rewards, dones, infos = env.step(actions)
        expected = np.array([info["env_reward_f64"] for info in infos])
        assert rewards.dtype == np.float32 and rewards.shape == (N_ENVS,)
        error = np.abs(totals[-1] - expected).max()
        assert error <= TOLERANCE, f"{task}: off by {error:.3g} at vectorised step {step}"
        ended += int(dones.sum())
    assert ended >= N_ENVS, "every environment should have crossed an episode boundary"
    assert env.steps == VEC_STEPS * N_ENVS
    env.close()


def recorded_batch(
    adapter: TaskAdapter, n: int
) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, np.ndarray]]:
    """`n` random transitions, one per environment, batched as the contract receives them."""
    states, actions, next_states = [], [], []
    for i in range(n):
        env = StateFieldsWrapper(adapter.make_env(), adapter)
        _obs, info = env.reset(seed=i)
        env.action_space.seed(i)
        action = env.action_space.sample()
        *_rest, next_info = env.step(action)
        states.append(info[STATE_KEY])
        actions.append(action)
        next_states.append(next_info[STATE_KEY])
        env.close()
    space = adapter.make_env().action_space
    return (
        stack_fields(states),
        batch_actions(np.asarray(actions), space),
        stack_fields(next_states),
    )


@pytest.mark.parametrize("task", SPARSE_TASKS)
def test_sparse_reward_runs_with_contract_shapes(task: str, tmp_path: Path) -> None:
    adapter = adapter_for(task)
    reward_fn, filename = load_kind(adapter, "sparse", tmp_path)
    state, action, next_state = recorded_batch(adapter, n=5)
    total, components = call_reward(reward_fn, state, action, next_state, 0, filename)
    assert total.shape == (5,) and total.dtype == np.float64
    assert components and all(value.shape == (5,) for value in components.values())
    assert np.all(np.isfinite(total))


def test_file_task_without_human_reward_trains_on_env_reward() -> None:
    """No `human_reward` in a task file: None, which the worker reads as "the env's own reward"."""
    adapter = load_task(task_file=EXAMPLES / "cartpole_task.toml")
    assert adapter.reward_source("human") is None
    assert "compute_reward" in (adapter.reward_source("sparse") or "")
