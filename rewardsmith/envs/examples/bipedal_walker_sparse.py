"""Sparse BipedalWalker reward: +1 on steps where the hull moves forward briskly."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps whose next_state.x_velocity exceeds 0.2, else 0.0."""
    brisk = (next_state.x_velocity > 0.2).astype(np.float64)
    return brisk, {"brisk": brisk}
