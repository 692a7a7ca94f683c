"""The line task's sparse reward: 1 on reaching the goal, 0 otherwise."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps that end at the goal (distance_to_goal <= 0), else 0.0."""
    arrived = (next_state.distance_to_goal <= 0).astype(np.float64)
    return arrived, {"arrived": arrived}
