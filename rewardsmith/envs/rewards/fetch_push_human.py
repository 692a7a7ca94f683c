"""FetchPushDense-v4's own reward: minus the distance from the block to the target."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays minus the block-to-target distance after the step (metres)."""
    offset = next_state.object_position - next_state.goal_position
    distance = -np.sqrt(np.sum(offset**2, axis=1))
    return distance, {"distance": distance}
