"""door-unlock-v3's own reward: up to 2 for bringing the hand's shoulder to the lock, plus up to 8
for pushing the lock to the unlocked position (Meta-World's long-tailed tolerance scales)."""

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
    """Pays 2 * (hand ready at the lock) + 8 * (lock pushed along x to the goal)."""
    offset = np.array([0.0, 0.055, 0.07])
    scale = np.array([0.25, 1.0, 0.5])
    lock = next_state.object_position
    shoulder_to_lock = (next_state.hand_position + offset - lock) * scale
    at_start = (next_state.initial_tcp_center + offset - next_state.lock_link_position) * scale
    ready = _tolerance(
        np.linalg.norm(shoulder_to_lock, axis=1), 0.0, 0.02, np.linalg.norm(at_start, axis=1)
    )
    lock_to_goal = np.abs(next_state.goal_position[:, 0] - lock[:, 0])
    pushed = _tolerance(lock_to_goal, 0.0, 0.005, np.full(lock_to_goal.shape, 0.1))
    return 2.0 * ready + 8.0 * pushed, {"ready": 2.0 * ready, "pushed": 8.0 * pushed}
