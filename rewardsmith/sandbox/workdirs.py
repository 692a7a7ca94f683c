"""The one directory a sandboxed program may write: made fresh, filled before the program starts.

The orchestrator never writes into a directory a sandboxed process could have written: a link
planted there (`smoke.log -> the venv's .pth`) would turn the orchestrator's write into a write
anywhere on the host. So each run gets its directory new: whatever held the name (an earlier
attempt, another candidate's run, a link) is removed without following a link, the directory is
created empty, and the inputs are written into it with `O_CREAT|O_EXCL|O_NOFOLLOW` before the
sandbox starts. Afterwards the orchestrator only reads there (`worker_files`) and may unlink its
own input copies by name (unlinking a link removes the link, never its target).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

Input = bytes | str | Path  # the content, or a trusted file of the orchestrator's to copy
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove(path: Path) -> None:
    """Remove whatever is at `path`: a link itself (never its target), a file, or a directory tree
    of any depth (`remove_tree`)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        remove_tree(path)
    else:
        os.unlink(path)


def remove_tree(path: Path) -> None:
    """Remove a directory tree through descriptors, never following a link, two open at a time.

    Each subdirectory of the top has its own subdirectories renamed up into the top before it is
    emptied and removed, so nothing recurses: `shutil.rmtree` recurses once per level, and a
    sandboxed program makes a 3,000-deep tree in 30 ms, on which it raised RecursionError.
    """
    top = os.open(path, _DIR)
    try:
        moved = 0
        while names := os.listdir(top):
            for name in names:
                if not stat.S_ISDIR(os.stat(name, dir_fd=top, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=top)
                    continue
                moved = _lift_children(top, name, moved)
                os.rmdir(name, dir_fd=top)
    finally:
        os.close(top)
    os.rmdir(path)


def _lift_children(top: int, name: str, moved: int) -> int:
    """Unlink the files of `top/name` and rename its directories into `top`; returns the count of
    names used so far for those (`.removing-N`, skipping any taken)."""
    folder = os.open(name, _DIR, dir_fd=top)
    try:
        for child in os.listdir(folder):
            if not stat.S_ISDIR(os.stat(child, dir_fd=folder, follow_symlinks=False).st_mode):
                os.unlink(child, dir_fd=folder)
                continue
            while True:
                moved += 1
                try:
                    os.rename(child, f".removing-{moved}", src_dir_fd=folder, dst_dir_fd=top)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise
    finally:
        os.close(folder)
    return moved


def fresh_dir(path: Path) -> None:
    """An empty directory at `path`, whatever was there before."""
    remove(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkdir(path, 0o755)  # fails if anything took the name meanwhile


def write_inputs(directory: Path, inputs: Mapping[str, Input]) -> None:
    """Create each input as a new file in `directory` (a plain name each; never overwriting)."""
    fd = os.open(directory, _DIR)
    try:
        for name, content in inputs.items():
            _check_name(name)
            out = os.open(name, _CREATE, 0o644, dir_fd=fd)
            with os.fdopen(out, "wb") as handle:
                if isinstance(content, Path):
                    with content.open("rb") as source:
                        shutil.copyfileobj(source, handle)
                else:
                    handle.write(content.encode("utf-8") if isinstance(content, str) else content)
    finally:
        os.close(fd)


def discard(directory: Path, names: Iterable[str]) -> None:
    """Unlink the named input copies after a run (a link is removed, never followed; a name the
    program turned into a directory is left alone)."""
    try:
        fd = os.open(directory, _DIR)
    except OSError:
        return
    try:
        for name in names:
            _check_name(name)
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def is_inside(path: Path, directory: Path) -> bool:
    """Whether `path` is `directory` or lies under it (after resolving both)."""
    return path.resolve().is_relative_to(directory.resolve())


def _check_name(name: str) -> None:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"an input must be a plain file name, not {name!r}")
