"""reach-v3's own reward: 10 times how close the fingertips are to the goal, on Meta-World's
long-tailed tolerance scale (1 within 5 cm, 0.1 at the distance the hand starts from)."""

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
    """Pays 10 * tolerance(fingertips-to-goal distance): 10 within 5 cm of the goal."""
    tcp_to_goal = np.linalg.norm(next_state.tcp_center - next_state.goal_position, axis=1)
    margin = np.linalg.norm(next_state.hand_initial_position - next_state.goal_position, axis=1)
    in_place = 10.0 * _tolerance(tcp_to_goal, 0.0, 0.05, margin)
    return in_place, {"in_place": in_place}
