"""Pendulum-v1's own reward: minus angle^2, 0.1 velocity^2 and 0.001 torque^2 (pre-step state)."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays -(angle^2 + 0.1*velocity^2) of `state` (before the step) - 0.001*clipped torque^2."""
    torque = np.clip(action[:, 0], -2.0, 2.0)
    angle_cost = -(state.pole_angle**2)
    velocity_cost = -0.1 * state.angular_velocity**2
    torque_cost = -0.001 * torque**2
    total = angle_cost + velocity_cost + torque_cost
    return total, {"angle": angle_cost, "velocity": velocity_cost, "torque": torque_cost}
