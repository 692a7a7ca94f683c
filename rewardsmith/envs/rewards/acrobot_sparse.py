"""Sparse Acrobot reward: +1 only on reaching the goal height."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 only on steps whose next_state.tip_height exceeds 1.0, else 0.0."""
    reached = (next_state.tip_height > 1.0).astype(np.float64)
    return reached, {"goal": reached}
