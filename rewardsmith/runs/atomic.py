"""Atomic file writes: a reader sees the old file or the new one, never half of either.

Each write goes to a temp file in the target's directory (same filesystem, so the rename is atomic),
is flushed and fsynced, renamed over the target with `os.replace`, and then the directory is fsynced
so that the rename itself survives a power cut. A crash before the rename leaves the old file intact
and at worst a hidden `.<name>.<random>.tmp` file, which the run store never reads.
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
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
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


def read_json(path: Path) -> Any:
    """Parse the JSON file at `path`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def to_json(obj: Any, *, indent: int | None = None) -> str:
    """JSON text that also takes paths and numpy/torch scalars, common in configs and metrics."""
    return json.dumps(obj, indent=indent, ensure_ascii=False, default=_plain)


def fsync_dir(path: Path) -> None:
    """Flush a directory's entries, so a file just created or renamed in it survives a crash."""
    fd = os.open(path, os.O_RDONLY)
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
