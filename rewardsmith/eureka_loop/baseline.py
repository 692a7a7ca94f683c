"""The environment's own reward as a candidate, for tasks without a human reward file.

A task file need not give its human reward in contract form; the environment's own reward is then
the baseline (as `rewardsmith train --reward human` does). It enters a run as a candidate whose
`reward.py` is exactly `ENV_REWARD_SOURCE`: it goes through the same nodes as any other candidate,
but no reward code runs for it. The critic has nothing to check, the preference check scores it
from the environment rewards recorded in the bank, and training sets the job's `env_reward` flag.
"""

from __future__ import annotations

ENV_REWARD_SOURCE = '''"""The environment's own reward.

This task has no human reward in contract form, so this candidate trains on the reward the
environment itself returns (as `rewardsmith train --reward human` does). It is the baseline the
evolved rewards must beat; there is no compute_reward, and no reward code runs for it.
"""
'''
ENV_REWARD_COMPONENT = "env_reward"  # the component name the worker reports for it


def is_env_reward(code: str | None) -> bool:
    """Whether a candidate's code is the environment-reward marker."""
    return code is not None and code.strip() == ENV_REWARD_SOURCE.strip()


def training_source(code: str) -> str | None:
    """What to train: the code, or None for the environment's own reward."""
    return None if is_env_reward(code) else code
