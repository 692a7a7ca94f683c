"""The task adapter: everything RewardSmith needs to know about one RL task.

An adapter turns an environment's observation (and, where it helps, simulator state) into named
state fields, scores an episode with a fitness that no reward function can see, and ships the
environment's own reward and a sparse reward written in the reward contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from rewardsmith.envs.obs_layout import ObservationLayout
from rewardsmith.envs.schema import StateSchema

RewardKind = Literal["human", "sparse"]


@dataclass
class Episode:
    """One finished episode: `states[f]` has T+1 rows (the reset state first), `actions` T rows."""

    states: dict[str, np.ndarray]
    actions: np.ndarray
    env_rewards: np.ndarray
    terminated: bool
    truncated: bool

    @property
    def length(self) -> int:
        """Steps taken (T): one less than the rows of each `states` array."""
        return len(self.env_rewards)


@dataclass
class TrainingDefaults:
    """How a task is trained unless the user says otherwise (in the spirit of rl-baselines3-zoo)."""

    algo: str = "ppo"
    steps: int = 100_000
    n_envs: int = 8
    normalize_obs: bool = False
    eval_episodes: int = 5
    eval_seeds: int = 2
    """Seeds per reward in a run's final evaluation. More where the human reward's own result
    spreads so far across seeds that two cannot tell a better reward from a lucky one."""
    hyperparams: dict[str, dict[str, Any]] = field(default_factory=dict)
    search_steps: int | None = None
    """Per-candidate budget in `run` and its final evaluation (all rewards get the same one);
    `steps` when unset. Ranking candidates needs less than training one policy to the end."""

    @property
    def loop_steps(self) -> int:
        """A candidate's budget in `run` and its final evaluation: `search_steps`, else `steps`."""
        return self.search_steps or self.steps


class TaskAdapter:
    """Base class for tasks; subclasses set the class attributes and implement the hooks."""

    id: str
    env_id: str
    goal: str
    schema: StateSchema
    fitness_description: str
    success_description: str | None = None
    make_kwargs: dict[str, Any] = {}  # noqa: RUF012 - read-only class default
    # Set where every field is an observation entry or a step-info value: training then reads
    # the state of all N environments from the stacked observations in one go.
    obs_layout: ObservationLayout | None = None
    training = TrainingDefaults()

    @property
    def has_success(self) -> bool:
        """Whether the task defines success; without it the analysis leaves success out."""
        return self.success_description is not None

    def make_env(self, **overrides: Any) -> gym.Env:
        """A fresh single environment (vectorisation happens in the worker).

        `overrides` replace `make_kwargs` (a shorter time limit, a render mode). An environment of
        an optional suite (Gymnasium-Robotics, Meta-World) has the suite imported first; a
        goal-dictionary observation reaches the policy flattened (`envs/goal_dict.py`).
        """
        from rewardsmith.envs.goal_dict import flatten_goal_dict
        from rewardsmith.envs.suites import ensure_registered

        ensure_registered(self.env_id)
        return flatten_goal_dict(gym.make(self.env_id, **{**self.make_kwargs, **overrides}))

    def state_vector(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """One environment's state fields as a new flat float64 vector, in `schema.layout` order.

        `env` may be the wrapped or the bare environment: read simulator state from
        `env.unwrapped`.

        This is what training reads on every step, so built-in adapters implement it directly
        (one small array instead of a dict per step). The default reads `obs_layout` where one
        is set, else flattens `state_fields`.
        """
        if self.obs_layout is not None:
            return self.obs_layout.row(obs, info)
        if type(self).state_fields is TaskAdapter.state_fields:
            raise NotImplementedError(
                f"{type(self).__name__} implements neither state_vector nor state_fields"
            )
        return self.schema.flatten(self.state_fields(env, obs, info))

    def state_fields(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> dict[str, Any]:
        """The named fields of one environment's current state, after a reset or a step.

        Floats for scalar fields, arrays for vector fields. The default splits `state_vector`.
        """
        if type(self).state_vector is TaskAdapter.state_vector and self.obs_layout is None:
            raise NotImplementedError(
                f"{type(self).__name__} implements neither state_vector nor state_fields"
            )
        return dict(self.schema.record(self.state_vector(env, obs, info)))

    def fitness(self, episode: Episode) -> float:
        """How well the episode did the task, from episode data only (never from a reward)."""
        raise NotImplementedError

    def success(self, episode: Episode) -> bool | None:
        """Whether the episode achieved the goal; None for tasks without a success notion."""
        return None

    def reward_source(self, kind: RewardKind) -> str | None:
        """The contract-form source of the task's human (shipped) or sparse reward.

        Built-in tasks always have both. A task file may name neither: None for `human` then means
        "train on the environment's own reward", and None for `sparse` means there is none.
        """
        name = f"{self.id.replace('-', '_')}_{kind}.py"
        return resources.files("rewardsmith.envs.rewards").joinpath(name).read_text()

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly description for `rewardsmith tasks` and the prompts."""
        return {
            "id": self.id,
            "env_id": self.env_id,
            "goal": self.goal,
            "fields": [f.to_dict() for f in self.schema.fields],
            "fitness": self.fitness_description,
            "success": self.success_description,
            "default_algo": self.training.algo,
            "default_steps": self.training.steps,
            "default_eval_seeds": self.training.eval_seeds,
        }
