"""Raw Linux system calls through ctypes: confinement that needs no package beyond the stdlib.

Only what Landlock, seccomp and the privilege drop need: a checked `syscall`, `prctl`, the
architecture's system call numbers, and the error every confinement step raises.
"""

from __future__ import annotations

import ctypes
import os
import platform
from typing import Any


class ConfinementError(RuntimeError):
    """Confinement could not be applied: the caller must not go on to run untrusted code."""


# Numbers of the system calls we call or filter, per architecture (from the kernel's unistd tables).
SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "chroot": 161,
        "bpf": 321,
        "keyctl": 250,
        "add_key": 248,
        "request_key": 249,
        "unshare": 272,
        "setns": 308,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "kexec_load": 246,
        "kexec_file_load": 320,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "open_by_handle_at": 304,
        "name_to_handle_at": 303,
        "swapon": 167,
        "swapoff": 168,
        "reboot": 169,
        "acct": 163,
        "clone": 56,
        "socket": 41,
        "socketpair": 53,
        "connect": 42,
        "seccomp": 317,
        "capget": 125,
        "capset": 126,
        "fallocate": 285,
        "memfd_create": 319,
        "shmget": 29,
        "chmod": 90,
        "fchmod": 91,
        "chown": 92,
        "fchown": 93,
        "lchown": 94,
        "fchownat": 260,
        "fchmodat": 268,
        "setxattr": 188,
        "lsetxattr": 189,
        "fsetxattr": 190,
        "removexattr": 197,
        "lremovexattr": 198,
        "fremovexattr": 199,
        "inotify_add_watch": 254,
        "open": 2,
        "creat": 85,
        "openat": 257,
        "mkdir": 83,
        "mkdirat": 258,
        "mknod": 133,
        "mknodat": 259,
        "link": 86,
        "linkat": 265,
        "symlink": 88,
        "symlinkat": 266,
        "rename": 82,
        "renameat": 264,
        "renameat2": 316,
        "unlink": 87,
        "unlinkat": 263,
        "rmdir": 84,
        "truncate": 76,
    },
    "aarch64": {
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "chroot": 51,
        "bpf": 280,
        "keyctl": 219,
        "add_key": 217,
        "request_key": 218,
        "unshare": 97,
        "setns": 268,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "kexec_load": 104,
        "kexec_file_load": 294,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "open_by_handle_at": 265,
        "name_to_handle_at": 264,
        "swapon": 224,
        "swapoff": 225,
        "reboot": 142,
        "acct": 89,
        "clone": 220,
        "socket": 198,
        "socketpair": 199,
        "connect": 203,
        "seccomp": 277,
        "capget": 90,
        "capset": 91,
        "fallocate": 47,
        "memfd_create": 279,
        "shmget": 194,
        "fchmod": 52,
        "fchmodat": 53,
        "fchownat": 54,
        "fchown": 55,
        "setxattr": 5,
        "lsetxattr": 6,
        "fsetxattr": 7,
        "removexattr": 14,
        "lremovexattr": 15,
        "fremovexattr": 16,
        "inotify_add_watch": 27,
        "openat": 56,
        "mkdirat": 34,
        "mknodat": 33,
        "linkat": 37,
        "symlinkat": 36,
        "renameat": 38,
        "renameat2": 276,
        "unlinkat": 35,
        "truncate": 45,
    },
}
# Numbered alike on every architecture (added after the tables were unified).
COMMON_SYSCALLS = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "landlock_create_ruleset": 444,
    "landlock_add_rule": 445,
    "landlock_restrict_self": 446,
    "memfd_secret": 447,
    "openat2": 437,
    "fchmodat2": 452,
    "setxattrat": 463,
    "removexattrat": 466,
}

PR_SET_NO_NEW_PRIVS = 38

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int


def arch() -> str:
    """The machine's architecture, if we know its system call numbers; else ConfinementError."""
    machine = platform.machine()
    if machine == "arm64":
        machine = "aarch64"
    if machine not in SYSCALLS:
        raise ConfinementError(f"no system call table for architecture {machine!r}")
    return machine


def number(name: str) -> int:
    """The system call number of `name` on this machine."""
    return COMMON_SYSCALLS.get(name) or SYSCALLS[arch()][name]


def _arg(value: Any) -> Any:
    """Integers go in as full machine words: a variadic call would otherwise pass 32 bits."""
    return ctypes.c_long(value) if isinstance(value, int) else value


def syscall(name: str, *args: Any) -> int:
    """Call system call `name`; OSError with the errno on failure."""
    result = int(_libc.syscall(ctypes.c_long(number(name)), *(_arg(a) for a in args)))
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def prctl(option: int, *args: int) -> int:
    """prctl(2) with unsigned long arguments; OSError on failure."""
    padded = [ctypes.c_ulong(a) for a in (*args, 0, 0, 0, 0)[:4]]
    result = int(_libc.prctl(ctypes.c_int(option), *padded))
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def set_no_new_privs() -> None:
    """No exec can grant privileges again (setuid bits, file capabilities): Landlock needs it."""
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
    except OSError as exc:
        raise ConfinementError(f"cannot set no_new_privs: {exc.strerror}") from exc


def libc() -> ctypes.CDLL:
    """The C library, for calls glibc wraps (mount, unshare)."""
    return _libc
