"""Atomic writes and versioned records: a reader sees the old file or the new one, never half.

The run store and the sandboxed programs (worker, evaluator, smoke test, scorer) both write with
these; the module sits below both, so neither imports the other (`rewardsmith.runs.atomic`
re-exports them for the run store; an import contract in pyproject.toml holds it). Each write goes to a new hidden temp
file in the target's directory (`O_EXCL`, never following a link), is fsynced and renamed over the
target: the rename replaces whatever the name held, a planted link included, without following it.

Every JSON record, the orchestrator's and the sandboxed programs', is written by `write_record`
and carries `schema_version`: a reader stops with a clear message on a layout it does not know,
instead of failing later in some unrelated place.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

SCHEMA_VERSION = 1
"""The layout of every JSON record: run-store records and the files the sandboxed programs write."""


def write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data`, atomically and durably."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_text(path: Path, text: str) -> None:
    """Replace `path` with UTF-8 `text`, atomically and durably."""
    write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> None:
    """Replace `path` with `obj` as indented JSON; a value that cannot be encoded writes nothing."""
    write_text(path, to_json(obj, indent=2) + "\n")


def record_json(record: Mapping[str, Any]) -> str:
    """`record` as indented JSON text, stamped with the current `schema_version`."""
    body = {k: v for k, v in record.items() if k != "schema_version"}
    return to_json({"schema_version": SCHEMA_VERSION, **body}, indent=2) + "\n"


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    """Write `record` atomically as JSON, stamped with the current `schema_version`."""
    write_text(path, record_json(record))


class RecordVersionError(ValueError):
    """A record without a usable `schema_version`; `newer` when a newer rewardsmith wrote it."""

    def __init__(self, reason: str, *, newer: int | None = None) -> None:
        super().__init__(reason)
        self.newer = newer


def record_body(record: Any, *, unversioned_ok: bool = False) -> dict[str, Any]:
    """The record without its `schema_version`, after checking that this code knows its layout.

    `unversioned_ok` reads a record from before records were versioned (the same layout as
    version 1) instead of refusing it.
    """
    if not isinstance(record, dict):
        raise RecordVersionError("is not a JSON object")
    body = dict(record)
    if "schema_version" not in body:
        if unversioned_ok:
            return body
        raise RecordVersionError("has no schema_version")
    version = body.pop("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordVersionError(f"has an invalid schema_version {version!r}")
    if version > SCHEMA_VERSION:
        raise RecordVersionError(
            f"has schema version {version}, newer than the {SCHEMA_VERSION} this code reads",
            newer=version,
        )
    return body


def to_json(obj: Any, *, indent: int | None = None) -> str:
    """JSON text that also takes paths and numpy/torch scalars, as records and metrics hold."""
    return json.dumps(obj, indent=indent, ensure_ascii=False, default=_plain)


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries, so a file just created or renamed in it survives a crash."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _plain(obj: Any) -> Any:
    if isinstance(obj, PurePath):
        return str(obj)
    item = getattr(obj, "item", None)
    if callable(item) and getattr(obj, "ndim", None) == 0:
        return item()
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")
