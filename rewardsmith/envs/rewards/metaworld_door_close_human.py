"""door-close-v3's own reward: 3 for the fingertips at the goal plus 6 for the handle there
(Meta-World's gaussian tolerance scales); 10 once the handle is within 5 cm of it."""

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
    """Pays 3 * (hand at the goal) + 6 * (handle at the goal), or 10 within 5 cm."""
    handle, goal = next_state.object_position, next_state.goal_position
    tcp_to_goal = np.linalg.norm(next_state.tcp_center - goal, axis=1)
    handle_to_goal = np.linalg.norm(handle - goal, axis=1)
    in_place = _tolerance(
        handle_to_goal,
        0.0,
        0.05,
        np.linalg.norm(next_state.door_position - goal, axis=1),
        sigmoid="gaussian",
    )
    hand_margin = np.linalg.norm(next_state.hand_initial_position - handle, axis=1) + 0.1
    hand_in_place = _tolerance(tcp_to_goal, 0.0, 0.25 * 0.05, hand_margin, sigmoid="gaussian")
    closed = handle_to_goal < 0.05
    hand = np.where(closed, 0.0, 3.0 * hand_in_place)
    door = np.where(closed, 10.0, 6.0 * in_place)
    return hand + door, {"hand": hand, "door": door}
