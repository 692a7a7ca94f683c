"""Load a reward file into a callable. Runs only inside the sandboxed worker, never the orchestrator."""

from __future__ import annotations

import linecache
import types
from pathlib import Path

from rewardsmith.reward.call import RewardFn
from rewardsmith.reward.describe import describe, user_traceback
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.static import check_source
from rewardsmith.reward.syntax import compile_module

__all__ = ["RewardFn", "load_reward", "load_reward_source", "user_traceback"]


def load_reward(path: Path) -> RewardFn:
    """Check and execute the reward module; return its `compute_reward`."""
    return load_reward_source(path.read_text(), str(path))


def load_reward_source(source: str, filename: str) -> RewardFn:
    """Check and execute reward `source`, shown in tracebacks as `filename`."""
    tree = check_source(source, filename)
    # Tracebacks show the reward's lines even where its file cannot be read (the reward process).
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType("candidate_reward")
    module.__file__ = filename
    try:
        exec(compile_module(tree, filename), module.__dict__)
    except BaseException as exc:  # any class at all, KeyboardInterrupt and SystemExit included
        raise RewardError(
            ErrorCategory.RUNTIME_ERROR,
            f"the reward module failed while loading: {describe(exc)}",
            traceback=user_traceback(exc, filename),
        ) from None
    fn = module.__dict__.get("compute_reward")
    if not callable(fn):
        raise RewardError(ErrorCategory.SIGNATURE_ERROR, "compute_reward is not a function")
    return fn
