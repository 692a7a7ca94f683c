"""Sparse MountainCar reward: +1 only on reaching the flag."""

import numpy as np


def compute_reward(state, action, next_state):
    at_flag = ((next_state.position >= 0.45) & (next_state.velocity >= 0.0)).astype(np.float64)
    return at_flag, {"goal": at_flag}
