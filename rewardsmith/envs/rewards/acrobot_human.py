"""Acrobot-v1's own reward: -1 per step until the tip rises above the line, 0 on that step."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays -1.0 per step until next_state.tip_height exceeds 1.0, then 0.0 on that step."""
    reached = next_state.tip_height > 1.0
    time_penalty = np.where(reached, 0.0, -1.0)
    return time_penalty, {"time_penalty": time_penalty}
