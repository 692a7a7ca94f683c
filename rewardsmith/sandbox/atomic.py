"""Atomic writes for the sandboxed programs: a reader sees the old file or the new one, never half.

The worker, the evaluator, the smoke test and the scorer write their records with these; they live
in the sandbox package so that a sandboxed program imports nothing from the run store
(`rewardsmith.runs.atomic` re-exports them for the run store). Each write goes to a new hidden temp
file in the target's directory (`O_EXCL`, never following a link), is fsynced and renamed over the
target: the rename replaces whatever the name held, a planted link included, without following it.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path, PurePath
from typing import Any


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
