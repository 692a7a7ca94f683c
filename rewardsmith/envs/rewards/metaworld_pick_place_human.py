"""pick-place-v3's own reward: hamacher(puck grasped, puck at the goal), plus 1 + 5 * (puck at the
goal) while the fingertips hold it lifted off the table, or 10 once it is within 5 cm of the goal.

Meta-World's "initial" pad positions alias the pads in the simulation, so the pad margins below
are measured from the pads now (left_pad_position, right_pad_position), as the environment does.
Where caging exceeds 0.97 and the gripper command (a float32) is positive, Meta-World's numpy
arithmetic drops to float32, so its reward there differs from this float64 one by up to ~5e-7.
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


def _grasped(action, next_state, radius=0.015):
    """pick-place's `_gripper_caging_reward`: the mean of caging (pads around the puck along y
    AND the fingertips over it in x-z) and hamacher(caging, the gripper command to close), the
    command counting only once caging exceeds 0.97."""
    puck = next_state.object_position
    left_gap = next_state.left_pad_position[:, 1] - puck[:, 1]
    right_gap = puck[:, 1] - next_state.right_pad_position[:, 1]
    y_caging = _hamacher(
        _tolerance(left_gap, radius, 0.05, np.abs(np.abs(left_gap) - 0.05)),
        _tolerance(right_gap, radius, 0.05, np.abs(np.abs(right_gap) - 0.05)),
    )
    xz = [0, 2]
    tcp_to_puck = np.linalg.norm((next_state.tcp_center - puck)[:, xz], axis=1)
    start = next_state.object_initial_position - next_state.initial_tcp_center
    xz_margin = np.linalg.norm(start[:, xz], axis=1) - 0.005
    caging = _hamacher(y_caging, _tolerance(tcp_to_puck, 0.0, 0.005, xz_margin))
    closing = np.clip(action[:, -1], 0.0, 1.0)
    gripping = np.where(caging > 0.97, closing, 0.0)
    return (_hamacher(caging, gripping) + caging) / 2.0


def compute_reward(state, action, next_state):
    """Pays hamacher(grasped, in place), + 1 + 5 * in place while holding the puck lifted; 10
    within 5 cm of the goal."""
    puck, goal = next_state.object_position, next_state.goal_position
    puck_to_goal = np.linalg.norm(puck - goal, axis=1)
    start_to_goal = np.linalg.norm(next_state.object_initial_position - goal, axis=1)
    in_place = _tolerance(puck_to_goal, 0.0, 0.05, start_to_goal)
    tcp_to_puck = np.linalg.norm(puck - next_state.tcp_center, axis=1)
    lifted = next_state.object_position[:, 2] - 0.01 > next_state.object_initial_position[:, 2]
    holding = (tcp_to_puck < 0.02) & (next_state.gripper_opening > 0) & lifted
    at_goal = puck_to_goal < 0.05
    grasp = np.where(at_goal, 0.0, _hamacher(_grasped(action, next_state), in_place))
    carry = np.where(at_goal, 10.0, np.where(holding, 1.0 + 5.0 * in_place, 0.0))
    return grasp + carry, {"grasp_and_place": grasp, "carry": carry}
