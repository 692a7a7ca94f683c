"""Sparse Meta-World pick-place reward: +1 on steps that end with the puck within 7 cm of the goal."""


def compute_reward(state, action, next_state):
    """Pays 1.0 on steps where the environment reports success, else 0.0."""
    success = 1.0 * next_state.success
    return success, {"success": success}
