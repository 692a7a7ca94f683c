"""A candidate's folder as plain data, to carry between machines, and its safe unpacking.

Only regular files travel (links, FIFOs and devices are left behind), under relative paths; the
receiving side refuses any path that is absolute, climbs out with `..`, or would pass through a
link, and caps the total size. The sending node is part of the user's cluster, but what lies in
a candidate's folder was written next to untrusted reward code, so it is unpacked as the
orchestrator reads any worker file: as data, never followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from rewardsmith.atomic import write_bytes
from rewardsmith.sandbox.worker_files import WorkerFileError, read_bytes

MAX_TOTAL_BYTES = 2 * 1024**3


class TransferError(ValueError):
    """A packed folder that cannot be unpacked safely."""


def pack_dir(root: Path) -> dict[str, bytes]:
    """Every regular file under `root`, keyed by its relative path; links, FIFOs and devices are
    left behind. Read as the orchestrator reads any worker file (`worker_files.read_bytes`: no
    link followed, no FIFO opened blocking, capped), so a file swapped after the walk saw it, or
    a folder over MAX_TOTAL_BYTES, is a TransferError, never a hang."""
    files: dict[str, bytes] = {}
    room = MAX_TOTAL_BYTES
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        dirnames[:] = [d for d in dirnames if not (base / d).is_symlink()]
        for name in filenames:
            if not stat.S_ISREG((base / name).lstat().st_mode):
                continue
            relative = (base / name).relative_to(root).as_posix()
            try:
                files[relative] = read_bytes(root, relative, room)
            except WorkerFileError as refused:
                raise TransferError(f"refused {refused}") from None
            room -= len(files[relative])
    return files


def _checked_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\0" in name:
        raise TransferError(f"refused a file path {name[:80]!r}: not a plain relative path")
    return path


def unpack_into(files: dict[str, bytes], root: Path) -> None:
    """Write `files` under `root`, replacing what is there; no path may leave `root`."""
    if sum(len(data) for data in files.values()) > MAX_TOTAL_BYTES:
        raise TransferError(f"refused a candidate folder of more than {MAX_TOTAL_BYTES:,} bytes")
    checked = {_checked_relative(name): data for name, data in files.items()}
    root.mkdir(parents=True, exist_ok=True)
    for relative, data in checked.items():
        target = root
        for part in relative.parts[:-1]:
            target = target / part
            if target.is_symlink():
                raise TransferError(f"refused {relative}: {target} is a link")
            target.mkdir(exist_ok=True)
        target = target / relative.parts[-1]
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise TransferError(f"refused {relative}: {target} is not a plain file")
        write_bytes(target, data)
