"""One checked reward call, shared by the training worker and the smoke test.

Kept free of torch and Stable-Baselines3 so the smoke test starts in a fraction of a second.
"""

from __future__ import annotations

import errno
import socket
from typing import Any

import numpy as np

from rewardsmith.envs.schema import StateBatch
from rewardsmith.reward.check import check_output
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.loader import user_traceback

_NETWORK_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN}


def exception_category(exc: BaseException) -> ErrorCategory:
    """The category of an exception raised inside reward code: most are plain runtime errors."""
    if isinstance(exc, MemoryError):
        return ErrorCategory.MEMORY_LIMIT
    no_thread = isinstance(exc, RuntimeError) and "can't start new thread" in str(exc)
    if isinstance(exc, BlockingIOError) or no_thread:
        return ErrorCategory.PROCESS_LIMIT
    if isinstance(exc, ConnectionError | socket.gaierror | socket.herror) or (
        isinstance(exc, OSError) and exc.errno in _NETWORK_ERRNOS
    ):
        return ErrorCategory.NETWORK_BLOCKED  # the sandbox has no network: only its own `lo`
    return ErrorCategory.RUNTIME_ERROR


def call_reward(
    reward_fn: Any,
    state: dict[str, np.ndarray],
    action: np.ndarray,
    next_state: dict[str, np.ndarray],
    step: int | None,
    filename: str,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One checked reward call: any exception or contract violation becomes a named RewardError."""
    try:
        result = reward_fn(StateBatch(state), action, StateBatch(next_state))
    except RewardError:
        raise
    except Exception as exc:
        raise RewardError(
            exception_category(exc),
            f"{type(exc).__name__}: {exc}",
            step=step,
            traceback=user_traceback(exc, filename),
        ) from None
    return check_output(result, len(action), step)
