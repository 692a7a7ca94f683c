"""A seccomp filter, assembled by hand as classic BPF: the system calls a reward never needs fail.

Denied calls return an error (EPERM unless said otherwise), never kill: Python turns them into an
OSError the worker reports. What is denied, and why:

- another process's memory or a debugger: ptrace, process_vm_readv/writev, pidfd_getfd;
- the filesystem tree and namespaces: mount (and the new mount API), umount2, pivot_root, chroot,
  unshare, setns, clone with any CLONE_NEW* flag; clone3 gets ENOSYS, so glibc falls back to clone,
  whose flags a filter can read (threads and fork use clone without CLONE_NEW*);
- the kernel's larger attack surfaces: bpf, keyctl/add_key/request_key, perf_event_open,
  userfaultfd, io_uring (whose requests would bypass this filter), open_by_handle_at,
  name_to_handle_at, modules, kexec, swap, reboot, acct;
- the network: `socket` for any family but AF_UNIX gets ENETUNREACH (the worker reports it as
  `network_blocked`); AF_UNIX only as SOCK_STREAM or SOCK_SEQPACKET (their sends ignore an address)
  and `connect` fails: Landlock up to ABI 7 does not govern pathname Unix sockets, so without
  this a reward could reach any socket file its uid can write (a desktop session bus, an agent,
  another run). What remains is socketpair and sockets passed in, and the abstract namespace,
  which is per network namespace and, from Landlock ABI 6, scoped to the sandbox's own domain;
- disk and memory outside the limits: `fallocate` (it reserves gigabytes of disk at once, past
  the write speed the disk monitor counts on; glibc's `posix_fallocate` reports EPERM rather than
  falling back to writes); where no memory cgroup counts them (`shared_memory=False`), also
  `memfd_create`, `memfd_secret` and SysV `shmget`, whose pages `RLIMIT_AS` does not see;
- where the other candidates' folders cannot be hidden (`attributes=False`: not root, no user
  namespaces, no bubblewrap, so every candidate runs as this same user and sees the others):
  changing a file's mode, owner or extended attributes, which Landlock up to ABI 7 does not
  govern (a reward that chmods a rival's folder to 000 crashes it and wins), and inotify
  watches, which would report a rival's every file event;
- once a program has opened the files it will write (`writes=False`, or the stacked
  `install_write_seal`): every call that creates, opens for writing, links, renames, removes or
  truncates a file by its path, so the program and the reward it then loads have no disk to fill.
  Landlock seals the same where the kernel has it; this holds where it does not;
- any other architecture's calling convention (x32, 32-bit) kills the process.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from rewardsmith.sandbox.syscall import (
    COMMON_SYSCALLS,
    SYSCALLS,
    ConfinementError,
    arch,
    set_no_new_privs,
    syscall,
)

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
SET_MODE_FILTER = 1
FILTER_FLAG_TSYNC = 1

LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
ALU_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K

# struct seccomp_data: nr (s32), arch (u32), instruction_pointer (u64), args (6 x u64).
NR_OFFSET, ARCH_OFFSET, ARGS_OFFSET = 0, 4, 16

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "open_by_handle_at",
    "name_to_handle_at",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "connect",
    "fallocate",
)
# Memory that no rlimit counts: denied unless a memory cgroup bounds the whole program.
SHARED_MEMORY = ("memfd_create", "memfd_secret", "shmget")
# What Landlock does not govern, denied where a rival's folders are in sight (the architectures
# that lack the older calls, such as aarch64's chmod and chown, simply do not have them).
ATTRIBUTE_CHANGES = (
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "setxattrat",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "removexattrat",
    "inotify_add_watch",
)
# What a sealed program may no longer do by path (the architectures without the older calls,
# such as aarch64's open and mkdir, simply do not have them). openat2's flags sit in a struct a
# filter cannot read: it gets ENOSYS, and libc falls back to openat.
FILE_CHANGES = (
    "creat",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "rmdir",
    "truncate",
)
# O_WRONLY | O_RDWR | O_CREAT | O_TRUNC (the same bits on both architectures), and the argument
# that holds each open call's flags.
OPEN_FOR_WRITING = 0o1 | 0o2 | 0o100 | 0o1000
OPEN_FLAGS_ARG = {"open": 1, "openat": 2}
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (CLONE_NEWTIME's bit is the
# exit signal in clone's flags: that namespace needs unshare or clone3, both denied).
CLONE_NEW_MASK = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
CLONE_NEW_MASK |= 0x20000000 | 0x40000000
AF_UNIX = 1
SOCK_TYPE_MASK = 0xF
SOCK_STREAM, SOCK_SEQPACKET = 1, 5


def _insn(code: int, k: int = 0, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def _arg_low(index: int) -> bytes:
    """Load the low 32 bits of argument `index` (both architectures are little-endian)."""
    return _insn(LD_W_ABS, ARGS_OFFSET + 8 * index)


def _deny(err: int) -> bytes:
    return _insn(RET_K, RET_ERRNO | err)


def _unix_socket_only(call: int, family_err: int) -> bytes:
    """`call` (socket or socketpair) only for AF_UNIX streams or seqpackets; returns if it matches."""
    body = [
        _arg_low(0),
        _insn(JEQ_K, AF_UNIX, jt=1),
        _deny(family_err),
        _arg_low(1),
        _insn(ALU_AND_K, SOCK_TYPE_MASK),
        _insn(JEQ_K, SOCK_STREAM, jt=2),
        _insn(JEQ_K, SOCK_SEQPACKET, jt=1),
        _deny(errno.EPERM),
        _insn(RET_K, RET_ALLOW),
    ]
    return _insn(JEQ_K, call, jf=len(body)) + b"".join(body)


def _numbers(machine: str) -> dict[str, int]:
    return {**SYSCALLS[machine], **COMMON_SYSCALLS}


def _prologue(machine: str) -> list[bytes]:
    """Kill any other calling convention, then load the system call's number."""
    if machine not in AUDIT_ARCH:
        raise ConfinementError(f"no seccomp filter for architecture {machine!r}")
    prog = [
        _insn(LD_W_ABS, ARCH_OFFSET),
        _insn(JEQ_K, AUDIT_ARCH[machine], jt=1),
        _insn(RET_K, RET_KILL_PROCESS),
        _insn(LD_W_ABS, NR_OFFSET),
    ]
    if machine == "x86_64":
        prog += [_insn(JGE_K, X32_SYSCALL_BIT, jf=1), _insn(RET_K, RET_KILL_PROCESS)]
    return prog


def _write_seal(numbers: dict[str, int]) -> list[bytes]:
    """Deny FILE_CHANGES and opening for writing; an open for reading returns allowed. EACCES,
    as Landlock answers: the reward's error reads the same whichever layer refused it."""
    prog = [
        _insn(JEQ_K, numbers[name], jf=1) + _deny(errno.EACCES)
        for name in FILE_CHANGES
        if name in numbers
    ]
    prog.append(_insn(JEQ_K, numbers["openat2"], jf=1) + _deny(errno.ENOSYS))
    for name, index in OPEN_FLAGS_ARG.items():
        if name in numbers:
            prog.append(
                _insn(JEQ_K, numbers[name], jf=4)
                + _arg_low(index)
                + _insn(JSET_K, OPEN_FOR_WRITING, jf=1)
                + _deny(errno.EACCES)
                + _insn(RET_K, RET_ALLOW)
            )
    return prog


def build_seal_filter(machine: str | None = None) -> bytes:
    """A filter of the write seal alone, to stack on the one a program already runs under."""
    machine = machine or arch()
    prog = [*_prologue(machine), *_write_seal(_numbers(machine)), _insn(RET_K, RET_ALLOW)]
    return b"".join(prog)


def build_filter(
    machine: str | None = None,
    *,
    shared_memory: bool = True,
    attributes: bool = True,
    writes: bool = True,
) -> bytes:
    """The filter program for this machine's architecture, as packed `struct sock_filter`s."""
    machine = machine or arch()
    prog = _prologue(machine)
    numbers = _numbers(machine)
    if not writes:
        prog += _write_seal(numbers)
    denied = [*DENIED, *([] if shared_memory else SHARED_MEMORY)]
    denied += [] if attributes else [name for name in ATTRIBUTE_CHANGES if name in numbers]
    for name in denied:
        prog += [_insn(JEQ_K, numbers[name], jf=1), _deny(errno.EPERM)]
    prog += [_insn(JEQ_K, numbers["clone3"], jf=1), _deny(errno.ENOSYS)]
    prog += [
        _insn(JEQ_K, numbers["clone"], jf=4),
        _arg_low(0),
        _insn(JSET_K, CLONE_NEW_MASK, jf=1),
        _deny(errno.EPERM),
        _insn(RET_K, RET_ALLOW),
    ]
    prog.append(_unix_socket_only(numbers["socket"], errno.ENETUNREACH))
    prog.append(_unix_socket_only(numbers["socketpair"], errno.EPERM))
    prog.append(_insn(RET_K, RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_seccomp(
    *, shared_memory: bool = True, attributes: bool = True, writes: bool = True
) -> None:
    """Install the filter on every thread of the process (TSYNC), after setting no_new_privs."""
    _install(build_filter(shared_memory=shared_memory, attributes=attributes, writes=writes))


def install_write_seal() -> None:
    """From here on no thread of this process, nor what it starts, can create, open for writing,
    rename or remove a file by path; descriptors opened before stay writable."""
    _install(build_seal_filter())


def _install(program: bytes) -> None:
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    set_no_new_privs()
    try:
        failed_thread = syscall("seccomp", SET_MODE_FILTER, FILTER_FLAG_TSYNC, ctypes.byref(fprog))
    except OSError as exc:
        raise ConfinementError(f"cannot install the seccomp filter: {exc.strerror}") from exc
    if failed_thread:
        raise ConfinementError(f"seccomp could not synchronise thread {failed_thread}")
