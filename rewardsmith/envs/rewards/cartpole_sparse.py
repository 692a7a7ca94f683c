"""Sparse CartPole reward: -1 only on the step where the pole falls or the cart leaves the track."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays -1.0 on the step the pole passes 12 degrees or the cart passes 2.4 m, else 0.0."""
    too_far = np.abs(next_state.pole_angle) > 12 * 2 * np.pi / 360  # the environment's own limit
    failed = too_far | (np.abs(next_state.cart_position) > 2.4)
    penalty = -failed.astype(np.float64)
    return penalty, {"failure": penalty}
