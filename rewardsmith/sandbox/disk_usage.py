"""How much disk a sandboxed program's directory takes, measured as hostile ground.

`RLIMIT_FSIZE` caps one file; a program can still write many of them, or a million empty ones,
and fill the disk under the run store. So `runner.run_job` measures the one writable directory
at every poll (`DiskWatch`) and kills the program past `Limits.disk_mb` or `Limits.disk_files`.

The walk trusts nothing in the tree: every entry is `lstat`ed through its parent's descriptor
(`fstatat` with no-follow), subdirectories are opened with `O_NOFOLLOW` relative to their parent,
so a link (or a directory swapped for one mid-walk) is counted as itself and never followed.
Bytes are `st_blocks * 512`: what an entry occupies, so a sparse file counts as its written
blocks and a preallocated one as all of them. The walk stops as soon as a cap is passed, so a
million files cost what the cap's count does, and it holds at most two descriptors per level
down to `MAX_DEPTH`; a deeper tree cannot be measured and counts as over the cap.

What it bounds: between two polls a program adds what plain writes manage in 0.25 s (plus one
file of up to `RLIMIT_FSIZE` in flight). `fallocate`, which reserves gigabytes in a microsecond,
is refused to reward code by the seccomp filter, so it does not widen that window.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_DEPTH = 32  # levels below the directory that are walked; deeper is over the cap
POLL_S = 0.2  # at most one walk per this; the process backend polls every 0.25 s, Docker 0.05 s
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_GONE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)  # removed or replaced while walked


@dataclass(frozen=True)
class Usage:
    """What a directory holds: bytes occupied and entries below it, each counted until a cap was
    passed; `problem` says why part of it could not be seen (that counts as over any cap)."""

    bytes: int
    entries: int
    problem: str | None = None

    def over(self, max_bytes: int, max_entries: int) -> bool:
        """Whether this passes either cap, or could not be measured."""
        return self.problem is not None or self.bytes > max_bytes or self.entries > max_entries


def measure(root: Path, max_bytes: int, max_entries: int) -> Usage:
    """The usage of `root` (its own blocks included), the walk stopped once a cap is passed."""
    try:
        fd = os.open(root, _DIR)
    except FileNotFoundError:
        return Usage(0, 0)
    walk = _Walk(max_bytes, max_entries)
    try:
        walk.bytes += os.fstat(fd).st_blocks * 512
        walk.run(fd)
    finally:
        os.close(fd)
    return Usage(walk.bytes, walk.entries, walk.problem)


class _Walk:
    """Depth-first over directory descriptors, tallying until a cap is passed."""

    def __init__(self, max_bytes: int, max_entries: int) -> None:
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self.bytes = self.entries = 0
        self.problem: str | None = None

    @property
    def done(self) -> bool:
        return (
            self.problem is not None
            or self.bytes > self.max_bytes
            or self.entries > self.max_entries
        )

    def run(self, root_fd: int) -> None:
        stack: list[tuple[int, Iterator[os.DirEntry[str]]]] = [(root_fd, os.scandir(root_fd))]
        try:
            while stack and not self.done:
                fd, entries = stack[-1]
                entry = self._next(entries)
                if entry is None:
                    _close(*stack.pop(), owned=len(stack) > 0)
                    continue
                child = self._visit(fd, entry, depth=len(stack))
                if child is not None:
                    stack.append((child, os.scandir(child)))
        finally:
            for i, (fd, entries) in enumerate(stack):
                _close(fd, entries, owned=i > 0)

    def _next(self, entries: Iterator[os.DirEntry[str]]) -> os.DirEntry[str] | None:
        try:
            return next(entries, None)
        except OSError as error:
            self._unseen(error)
            return None

    def _visit(self, parent: int, entry: os.DirEntry[str], depth: int) -> int | None:
        """Count `entry`; the descriptor of a directory to walk into, if it is one."""
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError as error:
            self._unseen(error)
            return None
        self.entries += 1
        self.bytes += info.st_blocks * 512
        if not stat.S_ISDIR(info.st_mode) or self.done:
            return None
        if depth >= MAX_DEPTH:
            self.problem = f"directories nested more than {MAX_DEPTH} deep"
            return None
        try:
            return os.open(entry.name, _DIR, dir_fd=parent)
        except OSError as error:
            self._unseen(error)
            return None

    def _unseen(self, error: OSError) -> None:
        """An entry that vanished mid-walk is fine (the next poll sees what replaced it); one
        that cannot be read (a directory made unreadable) hides its contents: over the cap."""
        if error.errno not in _GONE:
            self.problem = f"part of it cannot be read ({os.strerror(error.errno or 0)})"


def _close(fd: int, entries: Iterator[os.DirEntry[str]], owned: bool) -> None:
    entries.close()  # type: ignore[attr-defined]
    if owned:
        os.close(fd)


class DiskLimitExceeded(Exception):
    """Raised from the poll when the directory passed a cap: the backend kills the program and
    passes this on, as it does a cancel; `runner.run_job` turns it into `disk_limit`."""

    def __init__(self, usage: Usage) -> None:
        super().__init__(f"the directory holds at least {usage.bytes} bytes in {usage.entries}")
        self.usage = usage


class DiskWatch:
    """The caps of one program's directory: what its inputs take (measured before it starts)
    plus what the program may add."""

    def __init__(self, root: Path, add_bytes: int, add_entries: int) -> None:
        self.root = root
        self.inputs = measure(root, 1 << 62, 1 << 62)  # the orchestrator's own copies
        self.max_bytes = self.inputs.bytes + add_bytes
        self.max_entries = self.inputs.entries + add_entries
        self.last = 0.0

    def check(self) -> Usage | None:
        """The usage when past a cap, else None."""
        usage = measure(self.root, self.max_bytes, self.max_entries)
        return usage if usage.over(self.max_bytes, self.max_entries) else None

    def final(self) -> Usage:
        """What a killed program left, for its message: all the bytes, the entries up to ten
        times the cap (the walk's cost stays bounded)."""
        return measure(self.root, 1 << 62, 10 * self.max_entries)

    def poll(self, then: Callable[[], None] | None) -> Callable[[], None]:
        """The backend's poll: `then` (a cancel, progress) first, then a walk every `POLL_S`."""

        def poll() -> None:
            if then is not None:
                then()
            now = time.monotonic()
            if now - self.last < POLL_S:
                return
            self.last = now
            over = self.check()
            if over is not None:
                raise DiskLimitExceeded(over)

        return poll
