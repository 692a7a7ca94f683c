"""RewardSmith: LLM-written reward functions, trained in sandboxed runs and evolved from rollouts."""

__version__ = "0.1.0"
