"""The environment's own reward: forward velocity, +1 per healthy step, minus 0.001 * action^2."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays x_velocity, +1 while is_healthy, minus 1e-3 times the summed squared action."""
    forward = 1.0 * next_state.x_velocity
    healthy = 1.0 * next_state.is_healthy
    control = -1e-3 * np.sum(action**2, axis=1)
    return forward + healthy + control, {"forward": forward, "healthy": healthy, "control": control}
