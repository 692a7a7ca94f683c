"""CartPole-v1's own reward: +1 for every step the pole is still up (the failing step included)."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 for every step, the one on which the episode fails included."""
    alive = np.ones_like(next_state.pole_angle, dtype=np.float64)
    return alive, {"alive": alive}
