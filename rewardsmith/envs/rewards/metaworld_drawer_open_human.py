"""drawer-open-v3's own reward: 5 times (hand caging the handle + handle at the open position), on
Meta-World's long-tailed tolerance scales."""

import numpy as np


def _tolerance(x, lower, upper, margin, sigmoid="long_tail"):
    """Meta-World's `reward_utils.tolerance` for arrays: 1.0 within [lower, upper]; beyond, it
    falls to 0.1 at `margin` from the nearer bound (gaussian or long-tailed), 0.0 if margin is 0."""
    margin = np.asarray(margin, dtype=np.float64)
    beyond = np.where(x < lower, lower - x, x - upper) / np.where(margin > 0, margin, 1.0)
    if sigmoid == "gaussian":
        outside = np.exp(-0.5 * (beyond * np.sqrt(-2.0 * np.log(0.1))) ** 2)
    else:
        outside = 1.0 / ((beyond * np.sqrt(1.0 / 0.1 - 1.0)) ** 2 + 1.0)
    outside = np.where(margin > 0, outside, 0.0)
    return np.where((lower <= x) & (x <= upper), 1.0, outside)


def _hamacher(a, b):
    """Meta-World's `hamacher_product`: a soft AND of two values in [0, 1]."""
    denominator = a + b - a * b
    return np.where(denominator > 0, a * b / np.where(denominator > 0, denominator, 1.0), 0.0)


def compute_reward(state, action, next_state):
    """Pays 5 * (hand at the handle, x and y weighted 3x) + 5 * (handle pulled to the goal)."""
    hand, handle, goal = (
        next_state.hand_position,
        next_state.object_position,
        next_state.goal_position,
    )
    handle_error = np.linalg.norm(handle - goal, axis=1)
    opening = _tolerance(handle_error, 0.0, 0.02, np.full(handle_error.shape, 0.2))
    handle_at_start = goal + np.array([0.0, 0.2, 0.0])
    scale = np.array([3.0, 3.0, 1.0])
    hand_error = np.linalg.norm((handle - hand) * scale, axis=1)
    hand_error_at_start = np.linalg.norm(
        (handle_at_start - next_state.initial_tcp_center) * scale, axis=1
    )
    caging = _tolerance(hand_error, 0.0, 0.01, hand_error_at_start)
    return 5.0 * (caging + opening), {"caging": 5.0 * caging, "opening": 5.0 * opening}
