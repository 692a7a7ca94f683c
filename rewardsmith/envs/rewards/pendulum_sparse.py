"""Sparse Pendulum reward: +1 on steps where the pole is within 0.2 rad of upright."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps that end within 0.2 rad of upright, else 0.0."""
    upright = (np.abs(next_state.pole_angle) < 0.2).astype(np.float64)
    return upright, {"upright": upright}
