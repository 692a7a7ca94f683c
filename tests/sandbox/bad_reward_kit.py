"""What the hostile-reward tests share: limits, the way hostile code reaches forbidden modules,
a reward module from a function body, a tiny CartPole training, and the expected failure."""

from __future__ import annotations

from pathlib import Path

from rewardsmith.jobs.smoke import SmokeReport
from rewardsmith.jobs.training import TrainOutcome, make_job, train_reward
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox.types import Limits, Sandbox

LIMITS = Limits(wall_s=45, memory_mb=2048, processes=64, output_bytes=64_000)
TIMEOUT_LIMITS = Limits(wall_s=8, memory_mb=2048, processes=64, output_bytes=64_000)
# How hostile code reaches modules the static check forbids.
MODULES = 'vars(getattr(typing, "s" + "ys"))["mod" + "ules"]'
ESCAPE = f"import typing\nimport numpy as np\nimp = {MODULES}['importlib'].import_module\n"
CANARY = "sk-canary-" + "7f3a9c1e5b2d4f60"


def reward(body: str, preamble: str = "import numpy as np\n") -> str:
    """A reward module: `body` is the indented inside of compute_reward."""
    return preamble + "\n\ndef compute_reward(state, action, next_state):\n" + body


OK_RETURN = "    one = np.ones(len(action))\n    return one, {'alive': one}\n"


def train(
    cartpole: object,
    sandbox: Sandbox,
    source: str | None,
    candidate_dir: Path,
    limits: Limits = LIMITS,
    steps: int = 256,
) -> TrainOutcome:
    job = make_job(cartpole, steps=steps, seed=0)  # type: ignore[arg-type]
    job.eval_episodes, job.n_checkpoints = 2, 2
    return train_reward(cartpole, job, source, candidate_dir, sandbox, limits)  # type: ignore[arg-type]


def expect(outcome: TrainOutcome | SmokeReport, category: ErrorCategory) -> RewardError:
    assert outcome.error is not None, f"expected {category}, but the candidate passed"
    assert outcome.error.category == category, f"{outcome.error}\n{outcome.error.traceback}"
    return outcome.error
