"""MountainCarContinuous-v0's own reward: +100 at the flag, minus 0.1 * force^2 every step."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 100 at the flag (position >= 0.45, velocity >= 0) minus 0.1*force^2 every step."""
    at_flag = (next_state.position >= 0.45) & (next_state.velocity >= 0.0)
    goal = np.where(at_flag, 100.0, 0.0)
    energy = -0.1 * action[:, 0] ** 2
    return goal + energy, {"goal": goal, "energy": energy}
