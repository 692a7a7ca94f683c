"""Sparse MountainCar reward: +1 only on the step the car reaches the flag."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps that end at position 0.5 or beyond (the flag), else 0.0."""
    flag = (next_state.position >= 0.5).astype(np.float64)
    return flag, {"flag": flag}
