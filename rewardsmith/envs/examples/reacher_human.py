"""Reacher-v5's own reward: minus the fingertip-target distance and the summed squared torques."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays minus the fingertip-to-target distance and minus the step's summed squared torque."""
    distance = -np.sqrt(np.sum(next_state.fingertip_to_target**2, axis=1))
    control = -np.sum(action**2, axis=1)
    return distance + control, {"distance": distance, "control": control}
