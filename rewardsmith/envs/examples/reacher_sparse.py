"""Sparse Reacher reward: +1 on steps where the fingertip is within 1 cm of the target."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps that end with the fingertip within 0.01 m of the target, else 0.0."""
    close = (np.sqrt(np.sum(next_state.fingertip_to_target**2, axis=1)) < 0.01).astype(np.float64)
    return close, {"on_target": close}
