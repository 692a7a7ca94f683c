"""A stand-in for the run store with only what the select node touches, for its unit tests."""

from __future__ import annotations

from pathlib import Path

from rewardsmith.runs.candidate import CandidateFiles, CandidateKey


class SelectRun:
    """The run's candidate rows (for the noise margin), its candidate folders under `root`,
    and the round entry and summary fields the node writes, kept for the test to read."""

    def __init__(self, rows: list[dict], root: Path) -> None:
        self.rows, self.root, self.summary = rows, root, {}
        self.entry: dict = {}

    def candidates(self) -> list[dict]:
        return self.rows

    def write_round_file(self, round_: int, name: str, content: dict) -> None:
        self.entry = content

    def candidate(self, key: CandidateKey) -> CandidateFiles:
        return CandidateFiles(self.root, key)

    def update_summary(self, **fields: object) -> None:
        self.summary.update(fields)
