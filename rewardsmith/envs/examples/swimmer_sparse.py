"""Sparse Swimmer reward: +1 each time the swimmer crosses another half-metre mark forward
(-1 crossing one backward).

It pays nothing between marks, and over an episode it sums to the forward distance gained, in
half metres: the fitness, and nothing else.
"""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays +1 per half-metre mark crossed forward this step, -1 per mark crossed back."""
    marks = np.floor(2.0 * next_state.x_position) - np.floor(2.0 * state.x_position)
    return marks, {"half_metre_marks": marks}
