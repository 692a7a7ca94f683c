"""How the loop tells the outside world what it is doing (the CLI shows it live)."""

from __future__ import annotations

from typing import Any, Protocol


class Reporter(Protocol):
    def round_started(self, round: int, attempt: int) -> None: ...

    def candidate(self, round: int, idx: int, status: str, detail: str = "") -> None: ...

    def progress(self, round: int, idx: int, done: int, total: int) -> None: ...

    def best(self, summary: dict[str, Any]) -> None: ...

    def spend(self, tokens: int, usd: float) -> None: ...

    def message(self, text: str) -> None: ...


class NullReporter:
    """Reports nothing; for tests and `--json`."""

    def round_started(self, round: int, attempt: int) -> None:
        pass

    def candidate(self, round: int, idx: int, status: str, detail: str = "") -> None:
        pass

    def progress(self, round: int, idx: int, done: int, total: int) -> None:
        pass

    def best(self, summary: dict[str, Any]) -> None:
        pass

    def spend(self, tokens: int, usd: float) -> None:
        pass

    def message(self, text: str) -> None:
        pass
