"""HalfCheetah-v5's own reward: forward velocity minus 0.1 * sum of squared actions."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays next_state.x_velocity minus 0.1 times the step's summed squared action."""
    forward = 1.0 * next_state.x_velocity
    control = -0.1 * np.sum(action**2, axis=1)
    return forward + control, {"forward": forward, "control": control}
