"""Validate what a reward call returned: the contract's types, shapes and finiteness."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rewardsmith.reward.errors import ErrorCategory, RewardError


def _as_batch(value: Any, n: int, what: str, step: int | None) -> np.ndarray:
    if what == "total" and isinstance(value, bool | int | float | np.number):
        raise RewardError(
            ErrorCategory.SHAPE_ERROR,
            f"total is a scalar ({type(value).__name__}); expected shape [{n}] (one value per environment)",
            step=step,
        )
    if isinstance(value, bool | int | float) or value is None or isinstance(value, str):
        raise RewardError(
            ErrorCategory.DTYPE_ERROR if what != "total" else ErrorCategory.RETURN_TYPE_ERROR,
            f"{what} is a {type(value).__name__}; it must be a numpy array of shape [N] = [{n}]",
            step=step,
            component=None if what == "total" else what,
        )
    if not isinstance(value, np.ndarray):
        raise RewardError(
            ErrorCategory.DTYPE_ERROR,
            f"{what} is a {type(value).__name__}; it must be a numpy array of shape [{n}]",
            step=step,
            component=None if what == "total" else what,
        )
    if value.shape != (n,):
        raise RewardError(
            ErrorCategory.SHAPE_ERROR,
            f"{what} has shape {list(value.shape)}; expected [{n}] (one value per environment)",
            step=step,
            component=None if what == "total" else what,
        )
    if value.dtype.kind not in "fiub":
        raise RewardError(
            ErrorCategory.DTYPE_ERROR,
            f"{what} has dtype {value.dtype}; it must be numeric",
            step=step,
            component=None if what == "total" else what,
        )
    return value.astype(np.float64, copy=False)


_FLOAT64 = np.dtype(np.float64)


# What a component dict may hold: the wire to the learner, the records and the JAX export carry
# at most this many names of at most this many characters.
MAX_COMPONENTS = 256
MAX_COMPONENT_NAME = 200


def check_component_names(names: list[str], step: int | None) -> None:
    """Too many components, or an empty or over-long name, is the reward's contract error (named
    as a bad component dict is), caught in the smoke test before any training; the learner still
    checks the same limits on what the reward process sends, which may lie."""
    long = next((name for name in names if len(name) > MAX_COMPONENT_NAME), None)
    if len(names) > MAX_COMPONENTS:
        problem = f"compute_reward returned {len(names)} components; at most {MAX_COMPONENTS}"
    elif not all(names):
        problem = f"a component name is empty; names of 1 to {MAX_COMPONENT_NAME} characters"
    elif long is not None:
        problem = (
            f"component name {long[:40]!r}... has {len(long)} characters; "
            f"at most {MAX_COMPONENT_NAME}"
        )
    else:
        return
    raise RewardError(ErrorCategory.RETURN_TYPE_ERROR, f"{problem} are allowed", step=step)


def well_formed(result: Any, n: int) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
    """`result` itself when it plainly meets the contract, else None (then `check_output` decides).

    The fast path for the common case, taken on every training step: exact float64 `[n]` arrays
    under string keys, all finite (their sum is finite only if every value is). `check_output`
    accepts the same results and names the error for any other, so behaviour is the same.
    """
    if type(result) is not tuple or len(result) != 2:
        return None
    total, parts = result
    if type(parts) is not dict:
        return None
    shape = (n,)
    arrays = [total, *parts.values()]
    for values in arrays:
        if type(values) is not np.ndarray or values.dtype is not _FLOAT64 or values.shape != shape:
            return None
    for name in parts:
        if type(name) is not str:
            return None
    if not math.isfinite(np.add.reduce(np.array(arrays), axis=None)):
        return None
    return total, parts


def check_output(
    result: Any, n: int, step: int | None = None, row_steps: np.ndarray | None = None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Return (total, components) as float64 arrays of shape [n], or raise the named RewardError.

    `row_steps` gives each row's training step, for a call on many steps' transitions at once: a
    non-finite value then names the step of its first row, found from the values themselves."""
    if not isinstance(result, tuple) or len(result) != 2 or not isinstance(result[1], dict):
        got = type(result).__name__
        if isinstance(result, tuple):
            got = f"a tuple of {len(result)}"
        raise RewardError(
            ErrorCategory.RETURN_TYPE_ERROR,
            f"compute_reward returned {got}; it must return (total, {{name: component}})",
            step=step,
        )
    total = _as_batch(result[0], n, "total", step)
    components: dict[str, np.ndarray] = {}
    for name, value in result[1].items():
        if not isinstance(name, str):
            raise RewardError(
                ErrorCategory.RETURN_TYPE_ERROR,
                f"component key {name!r} is not a string",
                step=step,
            )
        components[name] = _as_batch(value, n, name, step)
    for name, value in components.items():
        if not np.all(np.isfinite(value)):
            raise RewardError(
                ErrorCategory.NONFINITE_REWARD,
                f"component {name!r} is not finite ({_nonfinite_summary(value)})",
                step=_first_bad_step(value, step, row_steps),
                component=name,
            )
    if not np.all(np.isfinite(total)):
        raise RewardError(
            ErrorCategory.NONFINITE_REWARD,
            f"the total reward is not finite ({_nonfinite_summary(total)})",
            step=_first_bad_step(total, step, row_steps),
            component="total",
        )
    return total, components


def _first_bad_step(
    values: np.ndarray, step: int | None, row_steps: np.ndarray | None
) -> int | None:
    if row_steps is None:
        return step
    return int(row_steps[int(np.flatnonzero(~np.isfinite(values))[0])])


def _nonfinite_summary(values: np.ndarray) -> str:
    nan = int(np.isnan(values).sum())
    inf = int(np.isinf(values).sum())
    return f"{nan} NaN and {inf} inf of {values.size} values"
