"""Sparse locomotion reward: +1 on steps where the robot moves forward faster than 1 m/s."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 on each step whose next_state.x_velocity exceeds 1 m/s, else 0.0."""
    fast = (next_state.x_velocity > 1.0).astype(np.float64)
    return fast, {"fast": fast}
