"""Sparse locomotion reward: +1 on steps where the robot moves forward faster than 1 m/s."""

import numpy as np


def compute_reward(state, action, next_state):
    fast = (next_state.x_velocity > 1.0).astype(np.float64)
    return fast, {"fast": fast}
