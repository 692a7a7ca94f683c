"""HandManipulateBlockRotateZDense-v1's own reward: minus the angle between the block's
orientation and the target's (its position is not part of this task's goal)."""

import numpy as np


def compute_reward(state, action, next_state):
    """Pays minus the rotation angle (radians) from the block's orientation to the target's."""
    block, target = next_state.block_orientation, next_state.target_orientation
    # The scalar part of block * conjugate(target): cos of half the angle between them.
    cos_half = np.sum(block * target, axis=1)
    angle = 2.0 * np.arccos(np.clip(cos_half, -1.0, 1.0))
    return -angle, {"orientation_error": -angle}
