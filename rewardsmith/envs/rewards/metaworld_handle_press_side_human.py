"""handle-press-side-v3's own reward: 10 times (fingertips at the handle) AND (handle pressed
down), on Meta-World's long-tailed tolerance scales; 10 once it is within 2 cm of fully down."""

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
    """Pays 10 * hamacher(fingertips at the handle, handle pressed down), or 10 once pressed."""
    handle, goal = next_state.object_position, next_state.goal_position
    handle_to_goal = np.abs(handle[:, 2] - goal[:, 2])
    start_to_goal = np.abs(next_state.object_initial_position[:, 2] - goal[:, 2])
    in_place = _tolerance(handle_to_goal, 0.0, 0.02, np.abs(start_to_goal - 0.02))
    tcp_to_handle = np.linalg.norm(handle - next_state.tcp_center, axis=1)
    tcp_to_handle_at_start = np.linalg.norm(
        next_state.object_initial_position - next_state.initial_tcp_center, axis=1
    )
    reach = _tolerance(tcp_to_handle, 0.0, 0.02, np.abs(tcp_to_handle_at_start - 0.02))
    pressed = handle_to_goal <= 0.02
    pressing = np.where(pressed, 0.0, 10.0 * _hamacher(reach, in_place))
    bonus = np.where(pressed, 10.0, 0.0)
    return pressing + bonus, {"pressing": pressing, "pressed": bonus}
