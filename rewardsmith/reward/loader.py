"""Load a reward file into a callable. Runs only inside the sandboxed worker, never the orchestrator."""

from __future__ import annotations

import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.static import check_source

RewardFn = Callable[[Any, Any, Any], Any]


def user_traceback(exc: BaseException, filename: str) -> str:
    """The traceback restricted to the reward file's own frames, so users see their code only."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    lines = traceback.format_list(frames) if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip()


def load_reward(path: Path) -> RewardFn:
    """Check and execute the reward module; return its `compute_reward`."""
    source = path.read_text()
    filename = str(path)
    tree = check_source(source, filename)
    module = types.ModuleType("candidate_reward")
    module.__file__ = filename
    try:
        exec(compile(tree, filename, "exec"), module.__dict__)
    except Exception as exc:
        raise RewardError(
            ErrorCategory.RUNTIME_ERROR,
            f"the reward module failed while loading: {type(exc).__name__}: {exc}",
            traceback=user_traceback(exc, filename),
        ) from None
    fn = module.__dict__.get("compute_reward")
    if not callable(fn):
        raise RewardError(ErrorCategory.SIGNATURE_ERROR, "compute_reward is not a function")
    return fn
