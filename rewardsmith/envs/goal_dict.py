"""Goal-dictionary environments (Gymnasium-Robotics' `observation`, `achieved_goal`,
`desired_goal`): flattened into one vector, so the learners, the evaluator and the state fields
treat them as any flat-Box environment.

Gymnasium flattens a `Dict` space key by key in the space's own (sorted) key order, so each
entry is a fixed run of the flat vector: a field is that run, or some indices within it, and is
gathered from the stacked observations like any observation entry (`envs/obs_layout.py`).
"""

from __future__ import annotations

from typing import Any, TypeGuard

import gymnasium as gym
from gymnasium.wrappers import FlattenObservation


def is_goal_dict(space: gym.Space[Any]) -> TypeGuard[gym.spaces.Dict]:
    """Whether an observation space is a dictionary of flat boxes (a goal dictionary)."""
    return isinstance(space, gym.spaces.Dict) and all(
        isinstance(sub, gym.spaces.Box) and len(sub.shape) == 1 for sub in space.spaces.values()
    )


def flatten_goal_dict(env: gym.Env) -> gym.Env:
    """`env` with a goal-dictionary observation flattened into one float vector; others as is."""
    if is_goal_dict(env.observation_space):
        return FlattenObservation(env)
    return env


def key_offsets(space: gym.spaces.Dict) -> dict[str, range]:
    """Each key's place in the flattened observation, in Gymnasium's flattening order."""
    offsets: dict[str, range] = {}
    start = 0
    for key, sub in space.spaces.items():
        size = gym.spaces.flatdim(sub)
        offsets[key] = range(start, start + size)
        start += size
    return offsets


def goal_indices(space: gym.spaces.Dict, key: str, within: range | list[int]) -> tuple[int, ...]:
    """Flat indices of entries `within` (positions inside `key`'s vector) of dictionary entry
    `key`; the caller has checked that `key` exists and `within` is in range."""
    run = key_offsets(space)[key]
    return tuple(run[i] for i in within)
