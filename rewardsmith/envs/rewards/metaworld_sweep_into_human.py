"""sweep-into-v3's own reward: up to 2 for caging the puck between the finger pads, plus up to 6
for caging it AND having it at the hole, or 10 once it is within 5 cm of the hole (horizontally).

Meta-World's "initial" pad positions alias the pads in the simulation, so the pad margins below
are measured from the pads now (left_pad_position, right_pad_position), as the environment does.
"""

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


def _caging(next_state, radius=0.02):
    """sweep-into's `_gripper_caging_reward`: the mean of (pads around the puck along y AND the
    fingertips over it in x-z) and, once that exceeds 0.95, the pads snug against it."""
    puck = next_state.object_position
    left_gap = next_state.left_pad_position[:, 1] - puck[:, 1]
    right_gap = puck[:, 1] - next_state.right_pad_position[:, 1]
    left_margin = np.abs(np.abs(left_gap) - 0.05)
    right_margin = np.abs(np.abs(right_gap) - 0.05)
    y_caging = _hamacher(
        _tolerance(right_gap, radius, 0.05, right_margin),
        _tolerance(left_gap, radius, 0.05, left_margin),
    )
    y_gripping = _hamacher(
        _tolerance(right_gap, radius, radius + 0.005, right_margin),
        _tolerance(left_gap, radius, radius + 0.005, left_margin),
    )
    xz = [0, 2]
    tcp_to_puck = np.linalg.norm((next_state.tcp_center - puck)[:, xz], axis=1)
    start = next_state.object_initial_position - next_state.initial_tcp_center
    xz_margin = np.linalg.norm(start[:, xz], axis=1) - 0.01
    caging = _hamacher(y_caging, _tolerance(tcp_to_puck, 0.0, 0.01, xz_margin))
    gripping = np.where(caging > 0.95, y_gripping, 0.0)
    return (caging + gripping) / 2.0


def compute_reward(state, action, next_state):
    """Pays 2 * caging + 6 * hamacher(caging, puck at the hole); 10 within 5 cm of the hole."""
    puck, goal = next_state.object_position, next_state.goal_position
    hole = np.stack([goal[:, 0], goal[:, 1], puck[:, 2]], axis=1)  # at the puck's height
    puck_to_hole = np.linalg.norm(puck - hole, axis=1)
    start_to_hole = np.linalg.norm(next_state.object_initial_position - hole, axis=1)
    in_place = _tolerance(puck_to_hole, 0.0, 0.05, start_to_hole)
    caging = _caging(next_state)
    in_hole = puck_to_hole < 0.05
    cage = np.where(in_hole, 0.0, 2.0 * caging)
    place = np.where(in_hole, 10.0, 6.0 * _hamacher(caging, in_place))
    return cage + place, {"caging": cage, "in_place": place}
