"""Whole episodes of a JAX task under a policy, recorded as the task adapter's `Episode`s.

No reward code runs here unless a (deserialised, checked) export is passed in to sum its
components over the episodes. Fitness and success come from the task's own adapter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from rewardsmith.envs.adapter import Episode
from rewardsmith.rl.jax.env import BatchReward

PolicyFn = Callable[[jax.Array], jax.Array]  # observations [B, obs] -> actions [B, action]


def make_rollout(env: Any, n_episodes: int, reward: BatchReward | None = None) -> Any:
    """`run(policy, key)`: `n_episodes` environments side by side for one episode length, each
    step's fields, contract action, environment reward and termination recorded (and, given a
    reward, its total and components)."""
    task = env.task

    def run(policy: PolicyFn, key: jax.Array) -> dict[str, Any]:
        start = env.reset(jax.random.split(key, n_episodes))

        def one_step(state: Any, _: Any) -> tuple[Any, dict[str, Any]]:
            action = policy(state.obs)
            nxt = env.step(state, action)
            contract_action = task.contract_action(env.env_action(action))
            record = {
                "fields": env.fields(nxt.pipeline_state),
                "action": contract_action,
                "env_reward": nxt.reward,
                "done": nxt.done,
            }
            if reward is not None:
                record["reward"] = reward(
                    env.fields(state.pipeline_state), contract_action, record["fields"]
                )
            return nxt, record

        _, steps = jax.lax.scan(one_step, start, None, length=task.episode_length)
        steps["first"] = env.fields(start.pipeline_state)
        return steps

    return run


def to_episodes(steps: dict[str, Any]) -> tuple[list[Episode], list[dict[str, float]] | None]:
    """Cut the scanned `[T, B]` records at each environment's first termination."""
    steps = jax.device_get(steps)
    done = np.asarray(steps["done"]) > 0.5
    horizon, n = done.shape
    episodes: list[Episode] = []
    sums: list[dict[str, float]] | None = [] if "reward" in steps else None
    for i in range(n):
        ended = np.flatnonzero(done[:, i])
        length = int(ended[0]) + 1 if len(ended) else horizon
        states = {
            name: np.concatenate([[steps["first"][name][i]], values[:length, i]]).astype(np.float64)
            for name, values in steps["fields"].items()
        }
        action = np.asarray(steps["action"])[:length, i]
        episodes.append(
            Episode(
                states=states,
                actions=action.astype(np.int64 if action.dtype.kind in "iu" else np.float64),
                env_rewards=np.asarray(steps["env_reward"])[:length, i].astype(np.float64),
                terminated=bool(len(ended)),
                truncated=not len(ended),
            )
        )
        if sums is not None:
            total, parts = steps["reward"]
            row = {name: float(np.sum(np.asarray(v)[:length, i])) for name, v in parts.items()}
            row["__total__"] = float(np.sum(np.asarray(total)[:length, i]))
            sums.append(row)
    return episodes, sums


def deterministic_policy(make_policy: Any, params: Any) -> PolicyFn:
    """Brax's inference function in its deterministic mode (the mode of the action distribution)."""
    inference = make_policy(params, deterministic=True)
    key = jax.random.PRNGKey(0)
    return lambda obs: inference(obs, key)[0]


class PolicyRollout:
    """Deterministic episodes of Brax policies made by `make_policy`, compiled once."""

    def __init__(
        self,
        env: Any,
        n_episodes: int,
        make_policy: Any,
        reward: BatchReward | None = None,
    ) -> None:
        run = make_rollout(env, n_episodes, reward)
        self._run = jax.jit(lambda params, key: run(deterministic_policy(make_policy, params), key))

    def __call__(
        self, params: Any, key: jax.Array
    ) -> tuple[list[Episode], list[dict[str, float]] | None]:
        """The episodes from `key`, and per-episode reward sums (components and `__total__`),
        None without a reward."""
        return to_episodes(self._run(params, key))
