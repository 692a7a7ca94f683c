"""A tiny deterministic task: a point on a line must reach the goal.

It exists for the fast test tier and for checking an install in seconds: episodes last at most
25 steps, the whole state is two numbers, and PPO learns it within a couple of thousand steps,
so the loop runs end to end (design, critique, preference check, training, analysis) in the
time CartPole needs for one candidate. It is not listed among the tasks to benchmark.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from typing_extensions import override

from rewardsmith.envs.adapter import Episode, TaskAdapter, TrainingDefaults
from rewardsmith.envs.schema import Field, StateSchema

ENV_ID = "rewardsmith/Line-v0"
GOAL = 0.5
START = -0.5
STEP = 0.1
MAX_STEPS = 25


class LineEnv(gym.Env[np.ndarray, np.int64]):
    """Move left, stay or move right by 0.1; the episode ends at the goal (+0.5) or after
    25 steps. The start is -0.5 plus a little seeded noise, so episodes differ by seed only."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium's convention

    def __init__(self) -> None:
        # position in [-1, 1]; distance to the goal in [-0.5, 1.5]
        self.observation_space = spaces.Box(
            np.array([-1.0, -0.5], dtype=np.float32), np.array([1.0, 1.5], dtype=np.float32)
        )
        self.action_space = spaces.Discrete(3)
        self._position = START

    def _obs(self) -> np.ndarray:
        return np.array([self._position, GOAL - self._position], dtype=np.float32)

    @override
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._position = START + float(self.np_random.uniform(-0.05, 0.05))
        return self._obs(), {}

    @override
    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._position = float(np.clip(self._position + STEP * (int(action) - 1), -1.0, 1.0))
        reached = self._position >= GOAL
        return self._obs(), (1.0 if reached else -0.01), reached, False, {}


def _make_line(**kwargs: Any) -> gym.Env:
    return LineEnv()


if ENV_ID not in gym.registry:
    gym.register(ENV_ID, entry_point=_make_line, max_episode_steps=MAX_STEPS)


class Line(TaskAdapter):
    """The adapter of `LineEnv`: its observation is the state; fitness is the final position."""

    id = "line"
    env_id = ENV_ID
    goal = (
        "Move a point along a line from near -0.5 to the goal at +0.5 (actions: 0 left, 1 stay, "
        "2 right, 0.1 per step). The episode ends at the goal or after 25 steps."
    )
    schema = StateSchema(
        (
            Field("position", "position on the line; the goal is at +0.5, walls at +-1"),
            Field("distance_to_goal", "goal minus position; 0 or less at the goal"),
        )
    )
    fitness_description = "the final position (0.5 or more: at the goal)"
    success_description = "the point reached the goal within 25 steps"
    training = TrainingDefaults(
        algo="ppo",
        steps=4_096,
        search_steps=2_048,
        n_envs=4,
        eval_episodes=3,
        hyperparams={"ppo": {"n_steps": 64, "batch_size": 64, "n_epochs": 4, "gamma": 0.95}},
    )

    @override
    def state_vector(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return np.array(obs, dtype=np.float64)

    @override
    def fitness(self, episode: Episode) -> float:
        return float(episode.states["position"][-1])

    @override
    def success(self, episode: Episode) -> bool:
        return bool(episode.terminated)
