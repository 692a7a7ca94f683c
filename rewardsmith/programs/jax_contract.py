"""The reward contract under JAX: the same reward file, with `np` bound to `jax.numpy`.

Runs only where reward code may run (the sandboxed tracer). A reward that cannot be traced
(item assignment, a Python `if` on an array, `np.random`, `float()` of an array, ...) becomes one
named `jax_incompatible` error with the reward's line and the fix, fed back to the designer like
any other error.
"""

from __future__ import annotations

import builtins
import linecache
import traceback
import types
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

from rewardsmith.reward.call import RewardFn
from rewardsmith.reward.describe import describe, user_traceback
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.static import check_source
from rewardsmith.reward.syntax import compile_module


class JaxStateBatch:
    """Read-only attribute access to batched state fields held as JAX arrays (or tracers)."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name not in values:
            known = ", ".join(sorted(values))
            raise AttributeError(f"state has no field {name!r}; the fields are: {known}")
        return values[name]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("state is read-only")

    def __getitem__(self, name: str) -> Any:
        return self.__getattr__(name)

    def __contains__(self, name: object) -> bool:
        return name in object.__getattribute__(self, "_values")

    def __dir__(self) -> list[str]:
        return sorted(object.__getattribute__(self, "_values"))

    def keys(self) -> list[str]:
        """The field names, as `StateBatch.keys` gives them under numpy."""
        return list(object.__getattribute__(self, "_values"))


def _jax_import(
    name: str, globals_: Any = None, locals_: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    """`import numpy` gives `jax.numpy`; every other import is the ordinary one."""
    if level == 0 and (name == "numpy" or name.startswith("numpy.")):
        module: Any = jnp
        if fromlist:
            for part in name.split(".")[1:]:
                module = getattr(module, part)
        return module
    return builtins.__import__(name, globals_, locals_, fromlist, level)


def load_jax_reward(source: str, filename: str) -> RewardFn:
    """Check and execute reward `source` with `numpy` bound to `jax.numpy`; its `compute_reward`."""
    tree = check_source(source, filename)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType("candidate_reward_jax")
    module.__file__ = filename
    module.__dict__["__builtins__"] = {**vars(builtins), "__import__": _jax_import}
    try:
        exec(compile_module(tree, filename), module.__dict__)
    except BaseException as exc:
        raise incompatible(exc, filename, "while loading") from None
    fn = module.__dict__.get("compute_reward")
    if not callable(fn):
        raise RewardError(ErrorCategory.SIGNATURE_ERROR, "compute_reward is not a function")
    return fn


# What went wrong, and the fix: matched on the exception's class and message, first match wins.
_FIXES: tuple[tuple[type[BaseException], str, str, str], ...] = (
    (
        jax.errors.TracerBoolConversionError,
        "",
        "a Python `if`, `and`, `or`, `not` or `bool()` on an array",
        "compute both branches and pick with np.where(condition, a, b); combine conditions with "
        "np.logical_and / np.logical_or / np.logical_not",
    ),
    (
        jax.errors.TracerIntegerConversionError,
        "",
        "an array turned into a Python int (int(), range() or an index taken from an array)",
        "keep values as arrays: index with np.where or np.take, not with int(x)",
    ),
    (
        jax.errors.ConcretizationTypeError,
        "",
        "an array turned into a Python number (float(), .item(), math.* on an array, or a loop "
        "over array values)",
        "use np.* functions on whole arrays (np.sqrt, np.exp, np.abs, not math.sqrt or float())",
    ),
    (
        jax.errors.TracerArrayConversionError,
        "",
        "an array handed to code outside numpy (a Python list of arrays or a library call)",
        "use np.* functions on whole arrays",
    ),
    (
        TypeError,
        "immutable",
        "item assignment (`x[i] = ...`, `x[mask] += ...`): arrays cannot be changed in place",
        "build a new array: x = np.where(mask, new_value, x)",
    ),
    (
        TypeError,
        "does not support item assignment",
        "item assignment (`x[i] = ...`): arrays cannot be changed in place",
        "build a new array: x = np.where(mask, new_value, x)",
    ),
    (
        AttributeError,
        "has no attribute 'random'",
        "np.random: a reward must be a deterministic function of (state, action, next_state)",
        "remove the randomness",
    ),
    (
        AttributeError,
        "jax.numpy",
        "a numpy name that jax.numpy does not have",
        "use functions that numpy and jax.numpy share (np.where, np.clip, np.abs, np.sum, ...)",
    ),
    (
        AttributeError,
        "'copyto'",
        "an in-place numpy operation",
        "build a new array with np.where",
    ),
)


def _reward_line(exc: BaseException, filename: str) -> int | None:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    return frames[-1].lineno if frames else None


def incompatible(exc: BaseException, filename: str, when: str = "when traced") -> RewardError:
    """The named `jax_incompatible` error for an exception raised while tracing the reward."""
    what, fix = (
        "code that runs under numpy but not under jax.numpy",
        "use only operations that numpy and jax.numpy share, on whole arrays",
    )
    text = describe(exc)
    for kind, needle, problem, remedy in _FIXES:
        if isinstance(exc, kind) and needle in text:
            what, fix = problem, remedy
            break
    line = _reward_line(exc, filename)
    where = f" at line {line}" if line is not None else ""
    return RewardError(
        ErrorCategory.JAX_INCOMPATIBLE,
        f"the reward cannot run with np bound to jax.numpy ({when}): {what}{where}. "
        f"Fix: {fix}. ({text.splitlines()[0][:300]})",
        line=line,
        traceback=user_traceback(exc, filename),
    )
