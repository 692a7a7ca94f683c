"""button-press-v3's own reward: up to 2 for bringing the open gripper to the button, plus up to 8
for pressing it in once the fingertips are within 5 cm of it (Meta-World's tolerance scales)."""

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
    """Pays 2 * (gripper open AND near the button) + 8 * (button pressed) when near it."""
    button = next_state.object_position
    tcp_to_button = np.linalg.norm(button - next_state.tcp_center, axis=1)
    tcp_to_button_at_start = np.linalg.norm(button - next_state.initial_tcp_center, axis=1)
    button_to_goal = np.abs(next_state.goal_position[:, 1] - button[:, 1])
    near = _tolerance(tcp_to_button, 0.0, 0.05, tcp_to_button_at_start)
    pressed = _tolerance(button_to_goal, 0.0, 0.005, next_state.initial_button_to_goal)
    reach = 2.0 * _hamacher(np.maximum(next_state.gripper_opening, 0.0), near)
    press = np.where(tcp_to_button <= 0.05, 8.0 * pressed, 0.0)
    return reach + press, {"reach": reach, "press": press}
