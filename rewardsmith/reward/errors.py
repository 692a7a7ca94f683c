"""Named failure categories: every way a candidate reward can fail ends in exactly one of these."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class ErrorCategory(StrEnum):
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
    NETWORK_BLOCKED = "network_blocked"
    SANDBOX_DIED = "sandbox_died"
    CRASHED = "crashed"
    PREFERENCE_REJECTED = "preference_rejected"


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
        data = asdict(self)
        data["category"] = self.category.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RewardError:
        fields = {
            k: data.get(k) for k in ("message", "step", "component", "traceback", "line", "column")
        }
        return cls(category=ErrorCategory(data["category"]), **fields)  # type: ignore[arg-type]
