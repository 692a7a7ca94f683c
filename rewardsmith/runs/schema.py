"""Versioned records: every JSON file the run store writes says which layout it follows.

A run written by a newer rewardsmith may use fields this one does not understand; reading it must
stop with a message saying so, not fail later in some unrelated place.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsmith import __version__
from rewardsmith.runs.atomic import read_json, write_json

SCHEMA_VERSION = 1


class RunStoreError(Exception):
    """A run or record this rewardsmith cannot use; the message says what to do about it."""


def newer_version_error(what: Path, found: int, supported: int) -> RunStoreError:
    """The error for a file written by a newer rewardsmith, shared by JSON records and SQLite."""
    return RunStoreError(
        f"{what} has run-store schema version {found}, but this rewardsmith ({__version__}) "
        f"supports up to version {supported}; upgrade rewardsmith to read this run"
    )


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    """Write `record` atomically as JSON, stamped with the current `schema_version`."""
    body = {k: v for k, v in record.items() if k != "schema_version"}
    write_json(path, {"schema_version": SCHEMA_VERSION, **body})


def read_record(path: Path) -> dict[str, Any]:
    """Read a record written by `write_record`, without its `schema_version`.

    Raises `RunStoreError` for damaged files, files not written by the store, and newer versions;
    a missing file raises `FileNotFoundError` so callers can treat absence as they see fit.
    """
    try:
        record = read_json(path)
    except ValueError as e:
        raise RunStoreError(f"{path} is not valid JSON ({e}); the file is damaged") from e
    if not isinstance(record, dict) or "schema_version" not in record:
        raise RunStoreError(f"{path} has no schema_version; it was not written by the run store")
    version = record.pop("schema_version")
    if not isinstance(version, int) or version < 1:
        raise RunStoreError(f"{path} has an invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise newer_version_error(path, version, SCHEMA_VERSION)
    return record


def now_iso() -> str:
    """UTC timestamp for records and index rows: unambiguous, and sorts as text."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
