"""The reward contract: static checks, loading (sandbox side only) and output validation."""

from rewardsmith.reward.errors import ErrorCategory, RewardError

__all__ = ["ErrorCategory", "RewardError"]
