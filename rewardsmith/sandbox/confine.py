"""Confinement a process applies to itself, with the standard library only: no extra package.

`confine_self` sets no_new_privs, then Landlock (a filesystem readable only beneath the given
paths and writable only beneath the writable ones, no TCP, signals and abstract Unix sockets
scoped to the sandbox) where the kernel has it, then a seccomp filter (`seccomp.py`: no ptrace,
mounts, namespaces, bpf, keyrings or network sockets) on every thread.

Call it before starting threads: Landlock confines only the calling thread, so with other threads
alive it refuses (ConfinementError) rather than leave one unconfined. seccomp uses TSYNC and
covers all threads.

As a launcher, it is how the process backend starts every worker, and it fails closed: anything
it cannot apply ends it with status 126 and a one-line message, and CMD never runs.

    python -m rewardsmith.sandbox.confine [--read P]... [--list D]... [--write P]...
        [--hide D]... [--uid N --gid N] [--require-landlock] [--no-shared-memory]
        [--no-attribute-changes] -- CMD ARGS...

`--list` grants only the names in a directory (Landlock's READ_DIR), for a `.pth` entry Python
must list to import the package from it; `--no-shared-memory` denies memfd and SysV shared
memory where no memory cgroup counts them; `--no-attribute-changes` denies chmod, chown, extended
attributes and inotify watches where other candidates' folders cannot be hidden.

`--hide` (root, or root of a user namespace) covers directories with empty tmpfs in a private
mount namespace, putting back the read and write paths inside them (`mounts.py`), and any
parent of theirs the `--uid` could not traverse; `--uid` drops to that uid and gid (root only).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rewardsmith.sandbox.landlock import landlock_abi, restrict_filesystem, seal_writes
from rewardsmith.sandbox.seccomp import install_seccomp, install_write_seal
from rewardsmith.sandbox.syscall import ConfinementError, prctl, syscall

__all__ = [
    "ConfinementError",
    "confine_self",
    "drop_privileges",
    "install_seccomp",
    "landlock_abi",
    "restrict_filesystem",
    "seal_disk",
]

PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPABILITY_VERSION_3 = 0x20080522
EXIT_NOT_CONFINED = 126  # what a shell reports for a command found but not run


def confine_self(
    readable: Sequence[Path],
    writable: Sequence[Path],
    *,
    listable: Sequence[Path] = (),
    require_landlock: bool = False,
    shared_memory: bool = True,
    attributes: bool = True,
) -> list[str]:
    """no_new_privs, Landlock (if the kernel has it, or required) and seccomp; names in force.

    With nothing `writable`, seccomp also refuses every file creation and every open for writing,
    so nothing is written even where the kernel has no Landlock."""
    in_force = []
    if require_landlock or landlock_abi() > 0:
        in_force.append(f"landlock v{restrict_filesystem(readable, writable, listable)}")
    install_seccomp(shared_memory=shared_memory, attributes=attributes, writes=bool(writable))
    in_force.append("seccomp" if writable else "seccomp (no file writes)")
    return in_force


def seal_disk() -> list[str]:
    """From here on this process, and what it starts, can create, open for writing, rename or
    remove no file: Landlock's read-only layer where the kernel has it, and seccomp's write seal
    always. Descriptors opened before stay writable; returns the layers in force."""
    in_force = ["landlock"] if seal_writes() else []
    install_write_seal()
    return [*in_force, "seccomp"]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def capabilities() -> tuple[int, int]:
    """This thread's effective and permitted capability sets."""
    header = _CapHeader(CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    syscall("capget", ctypes.byref(header), data)
    effective = data[0].effective | data[1].effective << 32
    permitted = data[0].permitted | data[1].permitted << 32
    return effective, permitted


def drop_privileges(uid: int | None, gid: int | None) -> None:
    """Drop to `uid`/`gid` (with no supplementary groups) and verify no capability is left.

    Without a uid (root of a user namespace, or root kept on purpose), the capability bounding
    set and every set of this thread are emptied instead, so not even an exec regains them.
    """
    for cap in range(64):  # needs CAP_SETPCAP; without it (bubblewrap dropped it) the set is small
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                break  # past the kernel's last capability
    with contextlib.suppress(OSError):  # kernels before 4.3 have no ambient set
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    try:
        if gid is not None:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
        if uid is not None:
            os.setresuid(uid, uid, uid)
        else:
            header = _CapHeader(CAPABILITY_VERSION_3, 0)
            syscall("capset", ctypes.byref(header), (_CapData * 2)())
    except OSError as exc:
        raise ConfinementError(f"cannot drop privileges: {exc.strerror}") from exc
    if capabilities() != (0, 0):
        raise ConfinementError(f"capabilities left after the drop: {capabilities()}")
    if uid is not None and (os.getuid(), os.geteuid()) != (uid, uid):
        raise ConfinementError(f"still uid {os.getuid()} after dropping to {uid}")


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m rewardsmith.sandbox.confine",
        description="Confine this process (Landlock, seccomp, uid), then exec CMD.",
    )
    parser.add_argument("--read", action="append", default=[], type=Path, metavar="PATH")
    parser.add_argument("--list", action="append", default=[], type=Path, metavar="DIR")
    parser.add_argument("--write", action="append", default=[], type=Path, metavar="PATH")
    parser.add_argument("--hide", action="append", default=[], type=Path, metavar="DIR")
    parser.add_argument("--uid", type=int)
    parser.add_argument("--gid", type=int)
    parser.add_argument("--require-landlock", action="store_true")
    parser.add_argument("--no-shared-memory", action="store_true")
    parser.add_argument("--no-attribute-changes", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        parser.error("no command given after --")
    return args


def launch(args: argparse.Namespace) -> None:
    """Everything in order: hide, drop the uid, Landlock, seccomp; raises if any step fails."""
    from rewardsmith.sandbox import mounts

    keep = [(p, False) for p in args.read] + [(p, True) for p in args.write]
    hidden = list(args.hide)
    if hidden and args.uid is not None and args.uid != os.geteuid():
        hidden += mounts.closed_parents(p for p, _ in keep)
    if hidden:
        mounts.private_mount_namespace()
        mounts.hide(hidden, keep)
    drop_privileges(args.uid, args.gid if args.gid is not None else args.uid)
    confine_self(
        args.read,
        args.write,
        listable=args.list,
        require_landlock=args.require_landlock,
        shared_memory=not args.no_shared_memory,
        attributes=not args.no_attribute_changes,
    )


def _run_as_init(command: list[str]) -> int:
    """As PID 1 of a namespace, fork: the kernel ignores default signals (SIGXCPU) for PID 1."""
    child = os.fork()
    if child == 0:
        _exec(command)
    while True:
        pid, status = os.wait()  # also reaps orphans re-parented to us
        if pid == child:
            if os.WIFSIGNALED(status):
                return 128 + os.WTERMSIG(status)
            return os.waitstatus_to_exitcode(status)


def _exec(command: list[str]) -> None:
    try:
        os.execv(command[0], command)
    except OSError as exc:
        print(f"rewardsmith confine: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        os._exit(127)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m rewardsmith.sandbox.confine ... -- COMMAND`: confine, then exec COMMAND; the
    command never runs unconfined (`EXIT_NOT_CONFINED` with the reason instead)."""
    args = _arguments(sys.argv[1:] if argv is None else argv)
    try:
        launch(args)
    except (ConfinementError, OSError) as exc:
        print(
            f"rewardsmith confine: not confined, not running {args.command[0]}: {exc}",
            file=sys.stderr,
        )
        return EXIT_NOT_CONFINED
    sys.stdout.flush()
    if os.getpid() == 1:
        return _run_as_init(args.command)
    _exec(args.command)
    return 127  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())
