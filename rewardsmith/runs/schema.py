"""Versioned records: every JSON file the run store writes says which layout it follows.

A run written by a newer rewardsmith may use fields this one does not understand; reading it must
stop with a message saying so, not fail later in some unrelated place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsmith import __version__
from rewardsmith.atomic import SCHEMA_VERSION, RecordVersionError, record_body, write_record
from rewardsmith.runs.atomic import read_json, write_text
from rewardsmith.runs.layout import BANK_META, EVALUATION_REPORT, GENOME, OUTCOME

__all__ = [
    "SCHEMA_VERSION",
    "RunStoreError",
    "embedded_record",
    "now_iso",
    "read_record",
    "write_file",
    "write_record",
]

UNVERSIONED_RECORDS = frozenset({OUTCOME, EVALUATION_REPORT, GENOME, BANK_META})
"""Records that runs made before they were versioned hold without `schema_version`."""


class RunStoreError(Exception):
    """A run or record this rewardsmith cannot use; the message says what to do about it."""


def newer_version_error(what: Path, found: int, supported: int) -> RunStoreError:
    """The error for a file written by a newer rewardsmith, shared by JSON records and SQLite."""
    return RunStoreError(
        f"{what} has run-store schema version {found}, but this rewardsmith ({__version__}) "
        f"supports up to version {supported}; upgrade rewardsmith to read this run"
    )


def read_record(path: Path) -> dict[str, Any]:
    """Read a record written by `write_record`, without its `schema_version`.

    Raises `RunStoreError` for damaged files, files not written by the store, and newer versions;
    a missing file raises `FileNotFoundError` so callers can treat absence as they see fit.
    Records of older runs that predate versioning (`UNVERSIONED_RECORDS`) read as version 1.
    """
    path = Path(path)
    try:
        record = read_json(path)
    except ValueError as e:
        raise RunStoreError(f"{path} is not valid JSON ({e}); the file is damaged") from e
    try:
        return record_body(record, unversioned_ok=path.name in UNVERSIONED_RECORDS)
    except RecordVersionError as e:
        if e.newer is not None:
            raise newer_version_error(path, e.newer, SCHEMA_VERSION) from None
        raise RunStoreError(f"{path} {e}; it was not written by the run store") from None


def write_file(path: Path, content: str | Mapping[str, Any]) -> Path:
    """Write a run file atomically: text as is, a mapping as a versioned JSON record."""
    if isinstance(content, str):
        write_text(path, content)
    else:
        write_record(path, content)
    return path


def embedded_record(value: str | Mapping[str, Any]) -> dict[str, Any]:
    """A record held inside another one: an object, or JSON text, as replies recorded before
    genomes were stored as objects hold them."""
    if isinstance(value, Mapping):
        return dict(value)
    try:
        parsed = json.loads(value)
    except ValueError as e:
        raise RunStoreError(f"an embedded record is not valid JSON ({e})") from e
    if not isinstance(parsed, dict):
        raise RunStoreError("an embedded record is not a JSON object")
    return parsed


def now_iso() -> str:
    """UTC timestamp for records and index rows: unambiguous, and sorts as text."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
