"""Each JAX task's training budget and Brax PPO settings: what a job needs, without JAX.

The orchestrator builds jobs from these and never imports JAX; the sandboxed trainer reads the
same settings back from the job's hyperparameters (`policy.config_from_job`). The simulators,
fields and actions of each task are in `tasks.py`, which needs JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class PPOConfig:
    """Brax PPO settings (the `brax.training.agents.ppo.train` arguments) and the network."""

    num_envs: int = 64
    unroll_length: int = 32
    batch_size: int = 64
    num_minibatches: int = 8
    num_updates_per_batch: int = 4
    learning_rate: float = 3e-4
    entropy_cost: float = 1e-3
    discounting: float = 0.99
    gae_lambda: float = 0.95
    clipping_epsilon: float = 0.2
    reward_scaling: float = 1.0
    normalize_observations: bool = True
    max_grad_norm: float | None = 0.5
    hidden_sizes: tuple[int, ...] = (64, 64)

    def train_kwargs(self) -> dict[str, Any]:
        """The settings as `ppo.train` keyword arguments; `network_factory` takes `hidden_sizes`."""
        kwargs = {
            name: getattr(self, name)
            for name in (
                "num_envs",
                "unroll_length",
                "batch_size",
                "num_minibatches",
                "num_updates_per_batch",
                "learning_rate",
                "entropy_cost",
                "discounting",
                "gae_lambda",
                "clipping_epsilon",
                "reward_scaling",
                "normalize_observations",
                "max_grad_norm",
            )
        }
        return kwargs

    @property
    def steps_per_update(self) -> int:
        """Environment steps one PPO update collects (Brax rounds budgets to multiples of it)."""
        return self.batch_size * self.num_minibatches * self.unroll_length


@dataclass(frozen=True)
class JaxBudget:
    """A JAX task's default training budget, its search budget (`run`) and its PPO settings."""

    steps: int
    search_steps: int
    ppo: PPOConfig


# Classic control on gymnax: few environments (a CPU), short unrolls, a high learning rate.
_CLASSIC_PPO = PPOConfig(
    num_envs=32,
    unroll_length=16,
    batch_size=32,
    num_minibatches=4,
    num_updates_per_batch=4,
    learning_rate=1e-3,
    entropy_cost=1e-2,
    discounting=0.99,
)
# Brax's published MJX locomotion settings (discount 0.95 for halfcheetah, 8 updates per batch,
# unroll 20, entropy 1e-3, normalised observations) with far fewer environments for a CPU.
_MJX_PPO = PPOConfig(
    num_envs=64,
    unroll_length=20,
    batch_size=64,
    num_minibatches=8,
    num_updates_per_batch=8,
    learning_rate=3e-4,
    entropy_cost=1e-3,
    discounting=0.95,
    gae_lambda=0.95,
    clipping_epsilon=0.3,
    max_grad_norm=None,
    hidden_sizes=(64, 64),
)

BUDGETS: dict[str, JaxBudget] = {
    "cartpole": JaxBudget(
        # Measured on 2 CPU cores: 500 (the maximum) from ~150k steps, seed 0; about 30 s of
        # compilation, then ~50k steps/s. The search budget ranks rewards by how fast they get there.
        steps=300_000,
        search_steps=200_000,
        ppo=_CLASSIC_PPO,
    ),
    "pendulum": JaxBudget(
        steps=500_000,
        search_steps=300_000,
        ppo=replace(_CLASSIC_PPO, entropy_cost=1e-3, discounting=0.95),
    ),
    "acrobot": JaxBudget(
        steps=300_000,
        search_steps=200_000,
        ppo=_CLASSIC_PPO,
    ),
    "mountaincar-continuous": JaxBudget(
        steps=500_000,
        search_steps=300_000,
        ppo=replace(_CLASSIC_PPO, unroll_length=32, learning_rate=3e-4),
    ),
    "halfcheetah": JaxBudget(
        steps=1_000_000,
        search_steps=300_000,
        ppo=_MJX_PPO,
    ),
    "ant": JaxBudget(
        steps=1_000_000,
        search_steps=300_000,
        ppo=replace(_MJX_PPO, discounting=0.97),
    ),
    "humanoid": JaxBudget(
        steps=1_000_000,
        search_steps=300_000,
        ppo=replace(_MJX_PPO, discounting=0.97),
    ),
    "hopper": JaxBudget(
        steps=1_000_000,
        search_steps=300_000,
        ppo=replace(_MJX_PPO, discounting=0.97),
    ),
    "walker2d": JaxBudget(
        steps=1_000_000,
        search_steps=300_000,
        ppo=replace(_MJX_PPO, discounting=0.97),
    ),
}


def jax_budget(task_id: str) -> JaxBudget:
    """The budget of a task with a JAX variant (`rewardsmith.rl.jax.JAX_TASK_IDS`)."""
    try:
        return BUDGETS[task_id]
    except KeyError:
        raise KeyError(
            f"task {task_id!r} has no JAX variant; those with one: {sorted(BUDGETS)}"
        ) from None
