"""A reporter for loop tests: it keeps the run's messages for the test to read."""

from __future__ import annotations

from rewardsmith.eureka_loop.reporter import NullReporter


class Messages(NullReporter):
    """Keeps the run's messages."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)
