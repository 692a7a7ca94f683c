"""Sparse InvertedPendulum reward: -1 only on the step where the pole falls past 0.2 rad."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays -1.0 on steps that end with the pole beyond 0.2 rad of upright, else 0.0."""
    fell = -(np.abs(next_state.pole_angle) > 0.2).astype(np.float64)
    return fell, {"fell": fell}
