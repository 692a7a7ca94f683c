"""Ant-v5's own reward: forward velocity, +1 per healthy step, minus control and contact costs."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays x_velocity, +1 while healthy, minus 0.5*|action|^2 and 5e-4*|clipped forces|^2."""
    forward = 1.0 * next_state.x_velocity
    healthy = 1.0 * next_state.is_healthy
    control = -0.5 * np.sum(action**2, axis=1)
    contact = -5e-4 * np.sum(np.clip(next_state.contact_forces, -1.0, 1.0) ** 2, axis=1)
    total = forward + healthy + control + contact
    return total, {"forward": forward, "healthy": healthy, "control": control, "contact": contact}
