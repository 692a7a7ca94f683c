"""Named failure categories: every way a candidate reward can fail ends in exactly one of these."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class ErrorCategory(StrEnum):
    """The category of a failure; its value is what run records store and `from_dict` parses
    back, so an existing value must never be renamed."""

    EXTRACT_ERROR = "extract_error"
    SYNTAX_ERROR = "syntax_error"
    SIGNATURE_ERROR = "signature_error"
    FORBIDDEN_IMPORT = "forbidden_import"
    RETURN_TYPE_ERROR = "return_type_error"
    SHAPE_ERROR = "shape_error"
    DTYPE_ERROR = "dtype_error"
    RUNTIME_ERROR = "runtime_error"
    NONFINITE_REWARD = "nonfinite_reward"
    NONDETERMINISTIC = "nondeterministic"
    TOO_SLOW = "too_slow"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    PROCESS_LIMIT = "process_limit"
    DISK_LIMIT = "disk_limit"  # wrote more than its directory may hold (Limits.disk_mb, disk_files)
    NETWORK_BLOCKED = "network_blocked"
    SANDBOX_DIED = "sandbox_died"
    BAD_WORKER_OUTPUT = "bad_worker_output"  # a sandboxed program's record broke its schema
    CRASHED = "crashed"
    PREFERENCE_REJECTED = "preference_rejected"
    JAX_INCOMPATIBLE = "jax_incompatible"  # cannot be traced with np bound to jax.numpy


@dataclass
class RewardError(Exception):
    """A candidate reward failed; carries what the user and the designer need to fix it."""

    category: ErrorCategory
    message: str
    step: int | None = None
    component: str | None = None
    traceback: str | None = None
    line: int | None = None
    column: int | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        where = []
        if self.line is not None:
            where.append(f"line {self.line}" + (f", column {self.column}" if self.column else ""))
        if self.step is not None:
            where.append(f"at step {self.step}")
        if self.component is not None:
            where.append(f"component {self.component!r}")
        suffix = f" ({'; '.join(where)})" if where else ""
        return f"{self.category.value}: {self.message}{suffix}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record, the category as its value; `from_dict` rebuilds the error."""
        data = asdict(self)
        data["category"] = self.category.value
        return data

    @classmethod
    def from_dict(cls, data: Any) -> RewardError:
        """Rebuild an error from `to_dict`'s output. The data may come from a sandboxed process:
        anything malformed raises a `bad_worker_output` RewardError naming the field, nothing else.
        """
        if not isinstance(data, dict):
            raise _malformed(f"is {type(data).__name__}, not an object")
        try:
            category = ErrorCategory(str(data.get("category")))
        except (ValueError, TypeError):
            raise _malformed(f"has an unknown category {repr(data.get('category'))[:40]}") from None
        fields: dict[str, Any] = {}
        for key, cap in _TEXT_CAPS.items():
            value = data.get(key)
            if not isinstance(value, str) and (value is not None or key == "message"):
                raise _malformed(f"has a {key} that is not text")
            fields[key] = value if value is None else _clip(value, cap, keep_end=key == "traceback")
        for key in ("step", "line", "column"):
            value = data.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise _malformed(f"has a {key} that is not an integer")
            fields[key] = value
        return cls(category=category, **fields)


_TEXT_CAPS = {"message": 4000, "component": 200, "traceback": 20_000}


def _malformed(problem: str) -> RewardError:
    return RewardError(ErrorCategory.BAD_WORKER_OUTPUT, f"the error record {problem}")


def _clip(text: str, cap: int, keep_end: bool) -> str:
    """At most `cap` characters (a traceback keeps its end), always encodable as UTF-8."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    if len(text) <= cap:
        return text
    return "…" + text[-cap + 1 :] if keep_end else text[: cap - 1] + "…"
