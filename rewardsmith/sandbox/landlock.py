"""Landlock: a filesystem the process can read only where told and write only where told.

An unprivileged kernel feature (Linux 5.13+), so it holds on a machine with nothing installed but
pip packages. The ruleset handles every access right of the running kernel's ABI, so anything not
granted beneath a listed path is denied: reading, listing, executing, writing, creating, renaming.
From ABI 4 it also handles TCP bind and connect with no rule (no TCP at all), and from ABI 6 it
scopes abstract Unix sockets and signals to the process's own domain.

What it does not cover (up to ABI 7): path lookup and `stat` (names and sizes of files stay
visible where the uid can reach them), and connecting to a pathname Unix socket; the seccomp filter
and the mount namespace cover those.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from rewardsmith.sandbox.syscall import ConfinementError, set_no_new_privs, syscall

CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
FS_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

READ_ACCESS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# The only rights a rule on a file (not a directory) may carry.
FILE_ACCESS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where it lacks Landlock or a filter blocks the call."""
    try:
        return syscall("landlock_create_ruleset", None, 0, CREATE_RULESET_VERSION)
    except (OSError, ConfinementError):
        return 0


def handled_fs_access(abi: int) -> int:
    """Every filesystem right the ABI knows (the kernel refuses rights newer than its ABI)."""
    access = FS_ABI1
    if abi >= 2:
        access |= FS_REFER
    if abi >= 3:
        access |= FS_TRUNCATE
    if abi >= 5:
        access |= FS_IOCTL_DEV
    return access


def thread_count() -> int:
    """Threads of this process: Landlock confines the calling thread only."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        return threading.active_count()


def restrict_filesystem(
    readable: Sequence[Path], writable: Sequence[Path], listable: Sequence[Path] = ()
) -> int:
    """Read and execute beneath `readable`, everything beneath `writable`, nothing elsewhere;
    beneath `listable` only the names in directories (a `.pth` entry Python must list).

    Sets no_new_privs first. Paths that do not exist (or this uid cannot reach) are skipped. Must
    run before the process starts threads: `landlock_restrict_self` confines only the calling
    thread, so with other threads alive it raises instead. Returns the ABI used.
    """
    abi = landlock_abi()
    if abi < 1:
        raise ConfinementError(
            "Landlock is not available (Linux 5.13+ with landlock in the LSM list)"
        )
    if (threads := thread_count()) > 1:
        raise ConfinementError(
            f"this process already runs {threads} threads; Landlock would confine only one: "
            "confine before starting threads"
        )
    handled = handled_fs_access(abi)
    attr = _RulesetAttr(
        handled_access_fs=handled,
        handled_access_net=NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0,
        scoped=SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0,
    )
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    try:
        ruleset = syscall("landlock_create_ruleset", ctypes.byref(attr), size, 0)
    except OSError as exc:
        raise ConfinementError(f"cannot create a Landlock ruleset: {exc.strerror}") from exc
    try:
        rules = ((readable, READ_ACCESS), (listable, FS_READ_DIR), (writable, handled))
        for paths, access in rules:
            for path in paths:
                _add_rule(ruleset, Path(path), access & handled)
        set_no_new_privs()
        try:
            syscall("landlock_restrict_self", ruleset, 0)
        except OSError as exc:
            raise ConfinementError(f"cannot enforce the Landlock ruleset: {exc.strerror}") from exc
    finally:
        os.close(ruleset)
    return abi


def _add_rule(ruleset: int, path: Path, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return  # nothing there to grant, or nothing this uid could use anyway
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FILE_ACCESS
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        syscall("landlock_add_rule", ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    except OSError as exc:
        raise ConfinementError(f"cannot add a Landlock rule for {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)


def seal_writes() -> bool:
    """From here on this process (and what it starts) can create, write, rename or remove no
    file: a further Landlock layer that grants reads only. Files opened before stay writable
    through their descriptors, so a program opens its outputs first, then seals, then loads
    reward code, which then has no disk to fill (RLIMIT_FSIZE still caps each output).

    Returns False where the kernel has no Landlock (the runner's polled cap is all there is);
    raises ConfinementError where Landlock exists but the layer cannot be added.
    """
    if landlock_abi() < 1:
        return False
    restrict_filesystem([Path("/")], [])
    return True
