"""Reading what a sandboxed process wrote: the orchestrator's only way into such a directory.

Whatever a sandboxed process can write is hostile input: in place of its result it may leave a link
to a host file (the orchestrator runs as root), a FIFO that blocks whoever opens it, a device, or
a file of gigabytes. So a worker file is opened only through its directory, each component without
following a link (`O_DIRECTORY|O_NOFOLLOW`, then `openat`), only if `lstat` says it is a regular
file with one link, with `O_NOFOLLOW|O_NONBLOCK` (a FIFO swapped in meanwhile cannot block) and
checked again with `fstat`; and at most `cap` bytes are read. Anything else is a `WorkerFileError`
naming the file and what was wrong, at once: nothing here blocks or raises anything else.
"""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from rewardsmith.atomic import RecordVersionError, record_body

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFDIR: "a directory",
}
MAX_NPZ_MEMBERS = 256


class WorkerFileError(Exception):
    """A file a sandboxed process wrote (or should have) cannot be used; says which and why."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name, self.problem = name, problem


class MissingWorkerFile(WorkerFileError):
    """The file is not there (the program died before writing it, or never does)."""


def read_bytes(directory: Path, name: str, cap: int) -> bytes:
    """The bytes of regular file `name` (relative, may have folders) under `directory`."""
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or ".." in parts:
        raise WorkerFileError(name, "not a plain relative file name")
    fd = _open_dir(directory, name)
    try:
        for part in parts[:-1]:
            what = f"its folder {part!r}"
            _check_folder(_lstat(part, fd, name, what), what, name)
            inner = _open_at(part, fd, _DIR_FLAGS, name)
            os.close(fd)
            fd = inner
        return _read_regular(fd, parts[-1], name, cap)
    finally:
        os.close(fd)


def list_names(directory: Path, cap: int) -> list[str]:
    """The names in `directory` (itself never a link), at most `cap` of them."""
    fd = _open_dir(directory, str(directory))
    try:
        names = os.listdir(fd)
    except OSError as exc:
        raise WorkerFileError(str(directory), f"cannot be listed: {_why(exc)}") from None
    finally:
        os.close(fd)
    if len(names) > cap:
        raise WorkerFileError(str(directory), f"holds {len(names)} entries, over the cap of {cap}")
    return names


def read_text(directory: Path, name: str, cap: int) -> str:
    """The file as strict UTF-8 text."""
    data = read_bytes(directory, name, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkerFileError(
            name, f"is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def parse_json(text: str, name: str) -> Any:
    """Parse untrusted JSON text; too deep, too long a number or not JSON: a `WorkerFileError`."""
    try:
        return json.loads(text)
    except RecursionError:
        raise WorkerFileError(name, "is JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, and integers with too many digits
        raise WorkerFileError(name, f"is not valid JSON ({str(exc)[:200]})") from None


def read_json(directory: Path, name: str, cap: int) -> Any:
    """The file's one JSON value. An empty file is missing: a program that opens its outputs
    before it seals the disk (`programs.sealed_outputs`) and dies leaves them empty."""
    text = read_text(directory, name, cap)
    if not text:
        raise MissingWorkerFile(name, "is empty (the program stopped before writing it)")
    return parse_json(text, name)


def read_record(directory: Path, name: str, cap: int) -> dict[str, Any]:
    """The file's one JSON record (`write_record`), its `schema_version` checked and removed."""
    try:
        return record_body(read_json(directory, name, cap))
    except RecordVersionError as exc:
        raise WorkerFileError(name, str(exc)) from None


def read_json_lines(directory: Path, name: str, cap: int) -> tuple[list[Any], str | None]:
    """One JSON value per line, up to the first line that is not JSON (a write cut off by a kill);
    returns the values and, if lines were dropped, a note saying so."""
    values: list[Any] = []
    for number, line in enumerate(read_text(directory, name, cap).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            values.append(parse_json(line, name))
        except WorkerFileError:
            return (
                values,
                f"{name}: line {number} is not JSON; it and the lines after it are ignored",
            )
    return values, None


def read_npz(directory: Path, name: str, cap: int, expanded_cap: int) -> dict[str, np.ndarray]:
    """Every array of an `.npz` file, never unpickling and never expanding past `expanded_cap`
    bytes (the sizes the zip declares bound what decompression may produce)."""
    data = read_bytes(directory, name, cap)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
        if len(members) > MAX_NPZ_MEMBERS:
            raise WorkerFileError(name, f"holds {len(members)} arrays, over {MAX_NPZ_MEMBERS}")
        expanded = sum(member.file_size for member in members)
        if expanded > expanded_cap:
            raise WorkerFileError(
                name, f"expands to {expanded} bytes, larger than the {expanded_cap}-byte cap"
            )
        with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
            return {key: np.asarray(arrays[key]) for key in arrays.files}
    except WorkerFileError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError, MemoryError) as exc:
        raise WorkerFileError(name, f"is not a readable .npz file ({str(exc)[:200]})") from None


def _open_dir(directory: Path, name: str) -> int:
    what = f"its folder {directory}"
    _check_folder(_lstat(directory, None, name, what), what, name)
    try:
        return os.open(directory, _DIR_FLAGS)
    except FileNotFoundError:
        raise MissingWorkerFile(name, f"its folder {directory} does not exist") from None
    except OSError as exc:
        raise WorkerFileError(
            name, f"its folder {directory} cannot be opened: {_why(exc)}"
        ) from None


def _open_at(part: str, dir_fd: int, flags: int, name: str) -> int:
    try:
        return os.open(part, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        raise MissingWorkerFile(name, "does not exist") from None
    except OSError as exc:
        raise WorkerFileError(name, f"cannot be opened: {_why(exc)}") from None


def _lstat(path: str | Path, dir_fd: int | None, name: str, what: str = "it") -> os.stat_result:
    try:
        return os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise MissingWorkerFile(name, f"{what} does not exist") from None
    except OSError as exc:
        raise WorkerFileError(name, f"{what} cannot be examined: {_why(exc)}") from None


def _check_folder(info: os.stat_result, what: str, name: str) -> None:
    kind = stat.S_IFMT(info.st_mode)
    if kind != stat.S_IFDIR:
        raise WorkerFileError(name, f"{what} is {_KINDS.get(kind, 'a file')}, not a folder")


def _read_regular(dir_fd: int, leaf: str, name: str, cap: int) -> bytes:
    seen = _lstat(leaf, dir_fd, name)
    _check_regular(seen, name, cap)  # before opening: a device is never even opened
    fd = _open_at(leaf, dir_fd, _FILE_FLAGS, name)
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
            raise WorkerFileError(name, "was replaced while it was being opened")
        _check_regular(opened, name, cap)
        chunks, left = [], cap + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise WorkerFileError(name, f"cannot be read: {_why(exc)}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:
        raise WorkerFileError(name, f"grew larger than the {cap}-byte cap while being read")
    return data


def _check_regular(info: os.stat_result, name: str, cap: int) -> None:
    kind = stat.S_IFMT(info.st_mode)
    if kind != stat.S_IFREG:
        what = _KINDS.get(kind, "not a regular file")
        raise WorkerFileError(name, f"is {what}; only a regular file is read")
    if info.st_nlink != 1:
        raise WorkerFileError(name, f"has {info.st_nlink} hard links; a worker's file has one")
    if info.st_size > cap:
        raise WorkerFileError(
            name, f"is {info.st_size} bytes, larger than the {cap}-byte cap for this file"
        )


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is, or goes through, a symbolic link"
    return exc.strerror or type(exc).__name__
