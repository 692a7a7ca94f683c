"""drawer-close-v3's own reward: 10 times (fingertips at the handle with the gripper closing) AND
(handle near the closed position), on Meta-World's tolerance scales; 10 once the drawer is closed
to within 6.5 cm."""

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
    """Pays 10 * hamacher(reach with a closing gripper, handle in place), or 10 when closed."""
    handle, goal = next_state.object_position, next_state.goal_position
    handle_to_goal = np.linalg.norm(handle - goal, axis=1)
    start_to_goal = np.linalg.norm(next_state.object_initial_position - goal, axis=1)
    in_place = _tolerance(handle_to_goal, 0.0, 0.05, np.abs(start_to_goal - 0.05))
    tcp_to_handle = np.linalg.norm(handle - next_state.tcp_center, axis=1)
    tcp_to_handle_at_start = np.linalg.norm(
        next_state.object_initial_position - next_state.initial_tcp_center, axis=1
    )
    reach = _tolerance(
        tcp_to_handle, 0.0, 0.005, np.abs(tcp_to_handle_at_start - 0.005), sigmoid="gaussian"
    )
    reach = _hamacher(reach, np.clip(action[:, -1], 0.0, 1.0))
    closed = handle_to_goal <= 0.05 + 0.015
    closing = np.where(closed, 0.0, 10.0 * _hamacher(reach, in_place))
    bonus = np.where(closed, 10.0, 0.0)
    return closing + bonus, {"closing": closing, "closed": bonus}
