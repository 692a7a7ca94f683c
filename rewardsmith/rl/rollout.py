"""Roll out a policy for whole episodes and record them; no reward code is involved here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.envs.adapter import Episode, TaskAdapter
from rewardsmith.rl.state_fields import STATE_KEY, StateFieldsWrapper, batch_actions, stack_fields

Policy = Callable[[np.ndarray], np.ndarray]


def rollout_episodes(
    adapter: TaskAdapter, policy: Policy, n_episodes: int, seed: int
) -> list[Episode]:
    """Run `n_episodes` episodes side by side (one env each) so the policy is queried in batches."""
    envs = [StateFieldsWrapper(adapter.make_env(), adapter) for _ in range(n_episodes)]
    states: list[list[dict[str, Any]]] = []
    actions: list[list[Any]] = [[] for _ in envs]
    rewards: list[list[float]] = [[] for _ in envs]
    observations = []
    for i, env in enumerate(envs):
        obs, info = env.reset(seed=seed + i)
        observations.append(obs)
        states.append([info[STATE_KEY]])
    active = list(range(n_episodes))
    ended: dict[int, tuple[bool, bool]] = {}
    while active:
        batch = policy(np.stack([observations[i] for i in active]))
        still_active = []
        for row, i in enumerate(active):
            obs, reward, terminated, truncated, info = envs[i].step(batch[row])
            observations[i] = obs
            states[i].append(info[STATE_KEY])
            actions[i].append(batch[row])
            rewards[i].append(float(reward))
            if terminated or truncated:
                ended[i] = (bool(terminated), bool(truncated))
            else:
                still_active.append(i)
        active = still_active
    for env in envs:
        env.close()
    action_space = envs[0].action_space
    return [
        Episode(
            states=stack_fields(states[i]),
            actions=batch_actions(np.asarray(actions[i]), action_space),
            env_rewards=np.asarray(rewards[i], dtype=np.float64),
            terminated=ended[i][0],
            truncated=ended[i][1],
        )
        for i in range(n_episodes)
    ]


def random_policy(adapter: TaskAdapter, seed: int) -> Policy:
    """Uniform random actions, for seeding trajectory banks and smoke-test states."""
    env = adapter.make_env()
    space = env.action_space  # the space outlives its env: sampling needs no simulator
    env.close()
    space.seed(seed)
    return lambda obs: np.stack([space.sample() for _ in range(len(obs))])


def summarize(adapter: TaskAdapter, episodes: list[Episode]) -> dict[str, Any]:
    """Fitness, success rate and length over episodes, from the adapter's own definitions."""
    fitness = [adapter.fitness(e) for e in episodes]
    successes = [adapter.success(e) for e in episodes]
    known = [s for s in successes if s is not None]
    return {
        "fitness": float(np.mean(fitness)),
        "fitness_std": float(np.std(fitness)),
        "fitness_per_episode": fitness,
        "success_rate": float(np.mean(known)) if known else None,
        "episode_length": float(np.mean([e.length for e in episodes])),
        "terminated_rate": float(np.mean([e.terminated for e in episodes])),
    }


def write_evaluation(adapter: TaskAdapter, episodes: list[Episode], eval_dir: Path) -> None:
    """What every reward-free evaluator leaves: the trajectories, with each episode's fitness
    and success, and the summary record the orchestrator reads back."""
    from rewardsmith import job_spec as files
    from rewardsmith.atomic import write_record
    from rewardsmith.rl.trajectories import save_episodes

    summary = summarize(adapter, episodes)
    save_episodes(
        eval_dir / files.TRAJECTORIES_FILE,
        episodes,
        summary["fitness_per_episode"],
        [adapter.success(e) for e in episodes],
    )
    write_record(eval_dir / files.EVAL_FILE, summary)
