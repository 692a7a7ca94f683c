"""Hiding host directories in a private mount namespace, with the paths a worker needs put back.

The launcher uses it where it is root, or root of its own user namespace, and bubblewrap is not
there to build a minimal root: an empty read-only tmpfs goes over each hidden directory (/home,
/root, /tmp, /var, /run, ...) and the interpreter, packages and job directory inside one are
bind-mounted back at the same path, read-only unless writable. The unprivileged uid the worker
then drops to can reach an interpreter under a parent closed to it (a pyenv under /root), and
cannot reach anything else there: not another run's store, not a socket file.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from rewardsmith.sandbox.syscall import ConfinementError, libc

CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RELATIME = 4096  # statvfs reports relatime with another bit than mount(2) takes


def _mount(
    source: str | None, target: Path | str, fstype: str | None, flags: int, data: str = ""
) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    result = libc().mount(
        enc(source), enc(str(target)), enc(fstype), ctypes.c_ulong(flags), enc(data or None)
    )
    if result != 0:
        err = ctypes.get_errno()
        raise ConfinementError(f"cannot mount {target}: {os.strerror(err)}")


def private_mount_namespace() -> None:
    """A mount namespace of our own, with no propagation back to the host's."""
    if libc().unshare(CLONE_NEWNS) != 0:
        err = ctypes.get_errno()
        raise ConfinementError(f"cannot make a mount namespace: {os.strerror(err)}")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def closed_parents(paths: Iterable[Path]) -> list[Path]:
    """Parents of `paths` that users other than their owner cannot search (e.g. /root)."""
    closed = set()
    for path in paths:
        for parent in Path(path).parents:
            with contextlib.suppress(OSError):
                if parent != Path("/") and not parent.stat().st_mode & 0o001:
                    closed.add(parent)
    return sorted(closed)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    kept: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def _locked_flags(path: Path) -> int:
    """The mount's current flags, which a remount inside a user namespace must keep."""
    f_flag = os.statvfs(path).f_flag
    flags = f_flag & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    return flags | (MS_RELATIME if f_flag & ST_RELATIME else 0)


def _read_only(path: Path) -> None:
    _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(path))


def hide(hidden: Sequence[Path], keep: Sequence[tuple[Path, bool]]) -> list[Path]:
    """Cover each of `hidden` with an empty read-only tmpfs, then bind `keep` back in place.

    `keep` holds (path, writable) pairs. Must run in a private mount namespace. Returns the
    directories actually hidden (those that exist and hold nothing the worker needs whole).
    """
    wanted = [(Path(p), w) for p, w in keep if os.path.exists(p)]
    covers = _covers(hidden, [p for p, _ in wanted])
    inside = sorted(
        ((p, w) for p, w in wanted if any(p.is_relative_to(h) and p != h for h in covers)),
        key=lambda pw: len(pw[0].parts),
    )
    pins = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p, _ in inside}
    try:
        for cover in covers:
            _mount("tmpfs", cover, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m")
        _bind_back(inside, pins)
        for cover in covers:
            _read_only(cover)
    finally:
        for fd in pins.values():
            os.close(fd)
    return covers


def _covers(hidden: Sequence[Path], wanted: Sequence[Path]) -> list[Path]:
    """The outermost real directories of `hidden` that lie inside no path the worker needs whole."""
    return [
        h
        for h in _outermost(Path(h) for h in hidden)
        if h.is_dir() and not h.is_symlink() and not any(h.is_relative_to(p) for p in wanted)
    ]


def _bind_back(inside: Sequence[tuple[Path, bool]], pins: dict[Path, int]) -> None:
    """Bind each kept path (parents first) to its place under the covers, read-only unless
    writable; one already visible with the same rights through an outer bind is skipped."""
    bound: list[tuple[Path, bool]] = []
    for path, writable in inside:
        if any(path.is_relative_to(b) and w == writable for b, w in bound):
            continue
        _mount_point(path, pins[path], [b for b, _ in bound])
        _mount(f"/proc/self/fd/{pins[path]}", path, None, MS_BIND | MS_REC)
        if not writable:
            _read_only(path)
        bound.append((path, writable))


def _mount_point(path: Path, pin: int, bound: list[Path]) -> None:
    """Create `path` (and its parents, mode 0755) in the tmpfs unless a bind already holds it."""
    if any(path.is_relative_to(b) for b in bound):
        return  # the real directory is there, under an outer bind
    old_umask = os.umask(0o022)
    try:
        for parent in reversed(path.parents):
            if not parent.exists():
                parent.mkdir(mode=0o755)
        if stat.S_ISDIR(os.fstat(pin).st_mode):
            path.mkdir(mode=0o755, exist_ok=True)
        elif not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
    except OSError as exc:
        raise ConfinementError(f"cannot make a mount point for {path}: {exc.strerror}") from exc
    finally:
        os.umask(old_umask)
