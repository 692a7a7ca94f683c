"""LunarLander-v3's own reward: progress in shaping (distance, speed, tilt, legs), fuel cost,
-100 for a crash or leaving the screen, +100 for coming to rest."""

import numpy as np


def _shaping(s):
    return (
        -100 * np.sqrt(s.x_position**2 + s.y_position**2)
        - 100 * np.sqrt(s.x_velocity**2 + s.y_velocity**2)
        - 100 * np.abs(s.angle)
        + 10 * s.left_leg_contact
        + 10 * s.right_leg_contact
    )


def compute_reward(state, action, next_state):
    """Pays the shaping gained minus fuel; instead -100 on a crash or exit, +100 once at rest."""
    progress = _shaping(next_state) - _shaping(state)
    main_engine = np.where(action == 2, -0.30, 0.0)
    side_engines = np.where((action == 1) | (action == 3), -0.03, 0.0)
    total = progress + main_engine + side_engines
    failed = (next_state.crashed > 0) | (np.abs(next_state.x_position) >= 1.0)
    total = np.where(failed, -100.0, total)
    total = np.where(next_state.at_rest > 0, 100.0, total)
    ended = failed | (next_state.at_rest > 0)
    outcome = np.where(ended, total, 0.0)
    components = {
        "progress": np.where(ended, 0.0, progress),
        "fuel": np.where(ended, 0.0, main_engine + side_engines),
        "outcome": outcome,
    }
    return total, components
