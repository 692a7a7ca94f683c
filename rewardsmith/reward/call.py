"""One checked reward call, shared by the training worker and the smoke test.

Kept free of torch and Stable-Baselines3 so the smoke test starts in a fraction of a second.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from typing import Any

import numpy as np

from rewardsmith.envs.schema import StateBatch
from rewardsmith.reward.check import check_component_names, check_output, well_formed
from rewardsmith.reward.describe import describe, message, user_traceback
from rewardsmith.reward.errors import ErrorCategory, RewardError

RewardFn = Callable[[Any, Any, Any], Any]
"""A loaded reward: `compute_reward(state, action, next_state)` (the loader makes one)."""

_NETWORK_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN}
_ERRNO = OSError.__dict__["errno"]  # OSError's own field: a subclass property cannot stand in


def exception_category(exc: BaseException) -> ErrorCategory:
    """The category of an exception raised inside reward code: most are plain runtime errors.

    Judged by the real type (a `__class__` property cannot pose as MemoryError) and never raises.
    """
    try:
        return _category(type(exc), exc)
    except BaseException:
        return ErrorCategory.RUNTIME_ERROR


def _category(kind: type[BaseException], exc: BaseException) -> ErrorCategory:
    if issubclass(kind, MemoryError):
        return ErrorCategory.MEMORY_LIMIT
    no_thread = issubclass(kind, RuntimeError) and "can't start new thread" in message(exc)
    if issubclass(kind, BlockingIOError) or no_thread:
        return ErrorCategory.PROCESS_LIMIT
    network = (ConnectionError, socket.gaierror, socket.herror)
    if issubclass(kind, network) or (
        issubclass(kind, OSError) and _ERRNO.__get__(exc, kind) in _NETWORK_ERRNOS
    ):
        return ErrorCategory.NETWORK_BLOCKED  # the sandbox has no network: only its own `lo`
    return ErrorCategory.RUNTIME_ERROR


def reward_error(exc: BaseException, step: int | None, filename: str) -> RewardError:
    """The RewardError for anything reward code raised: named by its real class, message capped."""
    return RewardError(
        exception_category(exc),
        describe(exc),
        step=step,
        traceback=user_traceback(exc, filename),
    )


def call_reward(
    reward_fn: Any,
    state: dict[str, np.ndarray],
    action: np.ndarray,
    next_state: dict[str, np.ndarray],
    step: int | None,
    filename: str,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """One checked reward call: any exception or contract violation becomes a named RewardError."""
    return call_reward_batches(
        reward_fn, StateBatch(state), action, StateBatch(next_state), step, filename
    )


def call_reward_batches(
    reward_fn: Any,
    state: StateBatch,
    action: np.ndarray,
    next_state: StateBatch,
    step: int | None,
    filename: str,
    row_steps: np.ndarray | None = None,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`call_reward` on state batches already built (e.g. lazily, as the reward process does);
    `row_steps`, for a batch of many steps, lets a non-finite value name its own step."""
    try:
        result = reward_fn(state, action, next_state)
    except BaseException as exc:  # whatever the reward raised, KeyboardInterrupt and SystemExit too
        raise reward_error(exc, step, filename) from None
    try:
        total, components = well_formed(result, len(action)) or check_output(
            result, len(action), step, row_steps
        )
    except BaseException as exc:  # the result's own methods (a hostile tuple or dict) can raise
        if type(exc) is RewardError:
            raise
        raise reward_error(exc, step, filename) from None
    check_component_names(list(components), step)
    return total, components
