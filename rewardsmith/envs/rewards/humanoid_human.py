"""Humanoid-v5's own reward: 1.25 * forward velocity, +5 per healthy step, minus control and
contact costs (the contact cost is capped at 10)."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.25*x_velocity, +5 while healthy, minus 0.1*|action|^2 and a contact cost <= 10."""
    forward = 1.25 * next_state.x_velocity
    healthy = 5.0 * next_state.is_healthy
    control = -0.1 * np.sum(action**2, axis=1)
    contact = -np.minimum(5e-7 * np.sum(next_state.contact_forces**2, axis=1), 10.0)
    total = forward + healthy + control + contact
    return total, {"forward": forward, "healthy": healthy, "control": control, "contact": contact}
