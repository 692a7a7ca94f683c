"""Sparse MountainCar reward: +1 only on reaching the flag."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps at the flag (position >= 0.45, velocity >= 0), else 0.0."""
    at_flag = ((next_state.position >= 0.45) & (next_state.velocity >= 0.0)).astype(np.float64)
    return at_flag, {"goal": at_flag}
