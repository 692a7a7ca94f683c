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
    (`shutil.rmtree` works through file descriptors and never follows a link inside)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


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
