"""Describe an exception raised by reward code without trusting it.

Reward code is hostile: its exception may be any BaseException subclass, its `__str__` may raise,
return a non-string, recurse or return megabytes, and its class may lie about its name (a
metaclass property) or its type (a `__class__` property). Everything here reads the interpreter's
own fields (the real type, `type`'s own `__name__`, `BaseException`'s own `__traceback__`), calls
the reward's `__str__` at most once, caps what it returns, and never raises.
"""

from __future__ import annotations

import traceback
from types import TracebackType

MESSAGE_CAP = 3_000
"""Characters of an exception's message kept; the rest is counted, not kept."""
NAME_CAP = 200
"""Characters of a class name kept (`type("x" * 10**6, ...)` is a valid class)."""
TRACEBACK_CAP = 8_000
"""Characters of a traceback kept (its end, where the error is)."""

_TYPE_NAME = type.__dict__["__name__"]
_EXC_TRACEBACK = BaseException.__dict__["__traceback__"]


def class_name(exc: BaseException) -> str:
    """The exception's class name as the interpreter knows it (no metaclass can intercept)."""
    try:
        name = _TYPE_NAME.__get__(type(exc), type)
        return cap(str.__str__(name), NAME_CAP) if isinstance(name, str) else "<unnamed exception>"
    except BaseException:
        return "<unnamed exception>"


def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text):,} characters in all]"


def message(exc: BaseException) -> str:
    """`str(exc)`, capped; a placeholder naming the failure when `__str__` misbehaves."""
    try:
        text = str(exc)
        if not issubclass(type(text), str):  # str() checks this too; a subclass is made plain
            return "<unprintable: __str__ did not return a string>"
        return cap(str.__str__(text), MESSAGE_CAP)
    except BaseException as inner:
        return f"<unprintable: its __str__ raised {class_name(inner)}>"


def describe(exc: BaseException) -> str:
    """`Name: message`, or just `Name` when the message is empty; under 4,000 characters, the
    most a stored error keeps (`RewardError.from_dict`)."""
    text = message(exc)
    return f"{class_name(exc)}: {text}" if text else class_name(exc)


def frames_in(exc: BaseException, filename: str) -> str:
    """The traceback's frames in `filename` only, repeated lines collapsed, or '' if unreadable."""
    try:
        tb = _EXC_TRACEBACK.__get__(exc, type(exc))
        if not isinstance(tb, TracebackType):
            return ""
        frames = [f for f in traceback.extract_tb(tb) if f.filename == filename]
        return "".join(traceback.StackSummary.from_list(frames).format())
    except BaseException:
        return ""


def user_traceback(exc: BaseException, filename: str) -> str:
    """The reward file's own frames and the `Name: message` line, capped; never raises."""
    text = frames_in(exc, filename) + describe(exc)
    if len(text) > TRACEBACK_CAP:
        text = (
            f"[... {len(text) - TRACEBACK_CAP:,} characters left out ...]\n" + text[-TRACEBACK_CAP:]
        )
    return text.rstrip()
