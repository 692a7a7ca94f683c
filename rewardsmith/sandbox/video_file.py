"""The trusted side's reader of a rollout video that a sandboxed program left behind.

The file is hostile input: the sandbox chose its name, its type and every byte in it. So it is
opened once, without following a link and without blocking on a fifo, and everything after that
goes through that one file descriptor: the checks (a single-linked regular file, within the size
cap, an ISO-BMFF/MP4 whose top-level boxes tile the file exactly and include a `moov`) and the copy
that keeps it. Nothing here decodes the video: a decoder is a large attack surface, and the
browser that finally plays the file has its own sandbox.

Only the last path component is guarded (`O_NOFOLLOW`): the caller passes a path whose folders the
sandbox cannot replace, as with every other file it reads back from a run's workdir.
Standard library only, so the trusted side takes on no new dependency to read a video.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

FTYP_MAX_BYTES = 1024
"""A real `ftyp` box is a major brand, a version and a few compatible brands: tens of bytes."""
MAX_TOP_LEVEL_BOXES = 1024
"""A real MP4 has a handful (`ftyp`, `moov`, `free`, `mdat`); a fragmented one a few per second."""
_COPY_CHUNK = 1024 * 1024


class _Refused(Exception):
    """A file that is not an acceptable video; the message is the reason."""


def check_video(path: Path, max_bytes: int) -> str | None:
    """None when `path` holds an acceptable MP4 of at most `max_bytes`, else the reason why not."""
    try:
        fd, size = _open_checked(path, max_bytes)
    except _Refused as exc:
        return str(exc)
    try:
        _check_boxes(fd, size)
    except _Refused as exc:
        return str(exc)
    finally:
        os.close(fd)
    return None


def keep_video(src: Path, dest: Path, max_bytes: int) -> str | None:
    """Check `src` and copy it to `dest` atomically; None when kept, else the reason it was not.

    The copy reads the descriptor the checks used (no second open by name), and the copy itself
    is checked again before the rename: the kept bytes are exactly bytes that passed."""
    try:
        fd, size = _open_checked(src, max_bytes)
    except _Refused as exc:
        return str(exc)
    try:
        _check_boxes(fd, size)
        _copy_atomically(fd, size, Path(dest))
    except _Refused as exc:
        return str(exc)
    finally:
        os.close(fd)
    return None


def _open_checked(path: Path, max_bytes: int) -> tuple[int, int]:
    """An open descriptor of a single-linked regular file of 1..max_bytes bytes, and its size."""
    try:
        before = os.lstat(path)
    except OSError as exc:
        raise _Refused(f"cannot read the video: {exc.strerror or type(exc).__name__}") from exc
    _check_stat(before, max_bytes)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _Refused(f"cannot open the video: {exc.strerror or type(exc).__name__}") from exc
    try:
        after = os.fstat(fd)
        _check_stat(after, max_bytes)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            raise _Refused("the video was replaced while it was being opened")
    except BaseException:
        os.close(fd)
        raise
    return fd, after.st_size


def _check_stat(info: os.stat_result, max_bytes: int) -> None:
    """Refuse anything but a plain, single-linked file within the size cap."""
    if not stat.S_ISREG(info.st_mode):
        raise _Refused(f"not a regular file (a {_file_kind(info.st_mode)})")
    if info.st_nlink != 1:
        raise _Refused(f"the file has {info.st_nlink} hard links; a video must have exactly one")
    if info.st_size == 0:
        raise _Refused("the video file is empty")
    if info.st_size > max_bytes:
        raise _Refused(f"video larger than the cap ({info.st_size} > {max_bytes} bytes)")


def _file_kind(mode: int) -> str:
    """A word for what a non-regular file is, for the refusal message."""
    kinds = {
        stat.S_ISLNK: "symbolic link",
        stat.S_ISDIR: "directory",
        stat.S_ISFIFO: "fifo",
        stat.S_ISSOCK: "socket",
        stat.S_ISCHR: "character device",
        stat.S_ISBLK: "block device",
    }
    return next((name for test, name in kinds.items() if test(mode)), "special file")


def _check_boxes(fd: int, size: int) -> None:
    """An `ftyp` box first, boxes tiling the file exactly, and a `moov` (the index) among them."""
    head = os.pread(fd, 8, 0)
    if len(head) < 8 or head[4:8] != b"ftyp":
        raise _Refused("not an MP4 file (no ftyp box at the start)")
    ftyp_size = struct.unpack(">I", head[:4])[0]
    if not 16 <= ftyp_size <= min(FTYP_MAX_BYTES, size) or ftyp_size % 4:
        raise _Refused(f"not an MP4 file (implausible ftyp box size {ftyp_size})")
    if b"moov" not in set(_top_level_boxes(fd, size)):
        raise _Refused("the MP4 has no moov box (an unfinished or truncated recording)")


def _top_level_boxes(fd: int, size: int) -> Iterator[bytes]:
    """The type of each top-level box, refusing any box that reaches past the end of the file."""
    offset = 0
    for _ in range(MAX_TOP_LEVEL_BOXES):
        if offset == size:
            return
        kind, box_size = _box_header(fd, offset, size)
        yield kind
        offset += box_size
    raise _Refused(f"more than {MAX_TOP_LEVEL_BOXES} top-level boxes")


def _box_header(fd: int, offset: int, size: int) -> tuple[bytes, int]:
    """One box's type and total size at `offset`: 32-bit size, 64-bit `largesize` (size 1), or
    size 0 for "to the end of the file"."""
    header = os.pread(fd, 16, offset)
    if len(header) < 8:
        raise _Refused(f"truncated box header at byte {offset}")
    box_size, kind = struct.unpack(">I4s", header[:8])
    header_size = 8
    if box_size == 1:
        if len(header) < 16:
            raise _Refused(f"truncated 64-bit box header at byte {offset}")
        box_size, header_size = struct.unpack(">Q", header[8:16])[0], 16
    elif box_size == 0:
        box_size = size - offset
    if not all(0x20 <= byte < 0x7F for byte in kind):
        raise _Refused(f"not an MP4 box type at byte {offset}")
    if box_size < header_size or offset + box_size > size:
        raise _Refused(
            f"box at byte {offset} claims {box_size} bytes; the file has {size - offset}"
        )
    return kind, box_size


def _copy_atomically(fd: int, size: int, dest: Path) -> None:
    """Copy `size` bytes of `fd` to a new temp file beside `dest`, check it, rename it over."""
    tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:8]}.tmp")
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    out = os.open(tmp, flags, 0o644)
    try:
        _copy_exactly(fd, out, size)
        _check_boxes(out, size)
        os.fsync(out)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        os.close(out)
    _fsync_dir(dest.parent)


def _copy_exactly(src: int, dest: int, size: int) -> None:
    """Copy bytes [0, size) of `src`; refuse a file that shrank or grew since it was checked."""
    offset = 0
    while offset < size:
        chunk = os.pread(src, min(_COPY_CHUNK, size - offset), offset)
        if not chunk:
            raise _Refused("the video shrank while it was being copied")
        _write_all(dest, chunk)
        offset += len(chunk)
    if os.pread(src, 1, size):
        raise _Refused("the video grew while it was being copied")


def _write_all(fd: int, data: bytes) -> None:
    """`os.write` may write less than asked; loop until all of `data` is written."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable; some filesystems cannot fsync a directory, which is harmless."""
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
