"""Sparse Fetch reach reward: +1 on steps that end with the gripper within 5 cm of the target."""


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps where the environment reports success, else 0.0."""
    success = 1.0 * next_state.is_success
    return success, {"success": success}
