"""Sparse LunarLander reward: +1 for coming to rest without crashing, -1 for a crash."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays +1.0 while at rest without a crash, -1.0 once crashed, else 0.0."""
    landed = (next_state.at_rest > 0) & (next_state.crashed == 0)
    crashed = next_state.crashed > 0
    outcome = np.where(landed, 1.0, 0.0) - np.where(crashed, 1.0, 0.0)
    return outcome, {"outcome": outcome}
