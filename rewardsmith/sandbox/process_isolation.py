"""What the process backend wraps a worker in on this machine, and the command line for it.

Every worker starts through the confine launcher (`confine.py`: Landlock, seccomp, uid `nobody`
as root), inside bubblewrap's minimal root where bubblewrap works, else inside `unshare`'s network
and PID namespaces with the launcher hiding the host's homes, stores and socket directories.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rewardsmith.sandbox.gpu import gpu_device_files

LAUNCHER = "rewardsmith.sandbox.confine"
NOBODY = 65534
TMP_BYTES = 64 * 1024 * 1024  # the worker's /tmp under bubblewrap; its scratch is the job dir

# What every worker may read besides the interpreter, the packages and its readable dirs.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The /etc files glibc and Python read. The rest of /etc (keys, credentials, the host's
# configuration) is not there under bubblewrap and not readable under Landlock.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/mime.types",
    "/etc/os-release",
)
DEVICES = ("/dev/urandom", "/dev/random", "/dev/zero")
DEVICES_WRITABLE = ("/dev/null", "/dev/full")
SYS_READABLE = ("/sys/devices/system/cpu",)  # the CPU topology BLAS and torch size threads by
# Without a PID namespace /proc shows every process: the worker reads only its own and these.
PROC_GLOBAL = ("/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat")
# Files in /proc a uid-0 process could write even without capabilities: read-only binds.
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")
# Without bubblewrap, the top-level directories a worker may see; every other one (homes, /work,
# /srv, /tmp, /var, /run, wherever run stores and checkouts live) is covered with an empty tmpfs
# where the launcher can mount, and only what the worker needs is bound back inside it.
VISIBLE_ROOTS = (*SYSTEM_DIRS, "/etc", "/proc", "/sys", "/dev")
HIDDEN_DEV = ("/dev/shm", "/dev/mqueue")  # shared memory and queues other processes leave there


def hidden_dirs(root: Path = Path("/")) -> list[Path]:
    """What the launcher covers without bubblewrap: every real directory at the top of the tree
    but the system ones, so a sibling candidate's folder is invisible wherever the store lives."""
    hidden = [Path(d) for d in HIDDEN_DEV]
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return hidden
    for entry in entries:
        path = Path("/") / entry.name
        if str(path) not in VISIBLE_ROOTS and entry.is_dir(follow_symlinks=False):
            hidden.append(path)
    return hidden


def interpreter_paths() -> list[Path]:
    """Paths the worker may read besides the system: the interpreter's prefixes and the package.

    Never a directory that holds more than packages: not the checkout around an editable install
    (which may hold a `.env`, a run store, other runs' code), even where a `.pth` file puts that
    checkout on the path (setuptools' `editable_mode=compat`, `setup.py develop`): Python then
    only needs to list it (`listable_paths`). A prefix that holds the checkout (a virtualenv made
    in it) is granted by its interpreter folders only.
    """
    package = _package_dir()
    paths = {package}
    for prefix in {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}:
        if package.parent.is_relative_to(prefix) and not _in_site_dir(package):
            paths.update(prefix / name for name in PREFIX_PARTS if (prefix / name).exists())
        else:
            paths.add(prefix)
    return sorted(paths)


PREFIX_PARTS = ("bin", "lib", "lib64", "include", "pyvenv.cfg")


def listable_paths() -> list[Path]:
    """Directories Python must list, not read, to import the package: a `.pth` entry holding it.

    Landlock grants these only the right to list names; under bubblewrap or the launcher's
    hidden roots they hold nothing but the mount points bound back into them.
    """
    package = _package_dir()
    return [package.parent] if package.parent in _pth_paths() else []


def _package_dir() -> Path:
    import rewardsmith

    return Path(rewardsmith.__file__).resolve().parent


def _in_site_dir(path: Path) -> bool:
    import site

    return any(path.is_relative_to(Path(d).resolve()) for d in site.getsitepackages())


def _pth_paths() -> set[Path]:
    """Directories the site-packages' `.pth` files add to every interpreter's path."""
    import site

    found = set()
    for directory in site.getsitepackages():
        for pth in Path(directory).glob("*.pth"):
            try:
                lines = pth.read_text().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                if line.strip() and not line.startswith(("#", "import ", "import\t")):
                    found.add((Path(directory) / line.strip()).resolve())
    return found


def _succeeds(command: list[str]) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=4)
def bwrap_works(bwrap: str) -> bool:
    """Whether bubblewrap can make its namespaces here (not in every container it can)."""
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net"]
    return _succeeds([*probe, "--unshare-pid", "--die-with-parent", "--", "/bin/true"])


@functools.lru_cache(maxsize=4)
def unshare_works(unshare: str, root: bool) -> bool:
    """Whether `unshare` can make network and PID namespaces here (as root or in a user one)."""
    return _succeeds([*unshare_prefix(unshare, root), "/bin/true"])


def unshare_prefix(unshare: str, root: bool) -> list[str]:
    """New network, PID (own /proc), IPC and UTS namespaces; not root: inside a user namespace."""
    cmd = [unshare, "--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts"]
    if not root:
        cmd.insert(1, "--map-root-user")
    return [*cmd, "--"]


@dataclass(frozen=True)
class Isolation:
    """The mechanisms this machine gives a worker, and the command line that applies them."""

    bwrap: str | None  # bubblewrap, if it works here
    unshare: str | None  # unshare, if it works here (used only without bubblewrap)
    landlock: int  # the kernel's Landlock ABI, 0 without
    root: bool  # the orchestrator is root
    nobody: bool  # ...and the worker drops to `nobody`

    @property
    def namespaces(self) -> bool:
        """Whether the worker gets its own network and PID namespaces (bubblewrap or unshare)."""
        return self.bwrap is not None or self.unshare is not None

    def mechanisms(self) -> list[str]:
        """What is in force, e.g. ["bubblewrap", "landlock v7", "seccomp", "uid nobody", ...]."""
        found = ["bubblewrap"] if self.bwrap else []
        found += [f"landlock v{self.landlock}"] if self.landlock else []
        found.append("seccomp")
        if self.nobody:
            found.append("uid nobody")
        elif self.root:
            found.append("root without capabilities")
        else:
            found.append("this user without capabilities")
        if self.namespaces:
            found.append("network namespace")
        if self.hides_host:
            found.append("host dirs hidden")
        return found

    @property
    def hides_host(self) -> bool:
        """Whether nothing of the host's top-level folders is visible but what the worker needs:
        bubblewrap's minimal root, or the launcher's tmpfs covers (root or a user namespace)."""
        return self.bwrap is not None or self.root or self.unshare is not None

    def command(
        self,
        python: list[str],
        writable: list[Path],
        readable: list[Path],
        *,
        shared_memory: bool = True,
    ) -> list[str]:
        """The full command line: the wrapper, then the launcher, then `python`.

        `shared_memory=False` (no memory cgroup counts it) denies `memfd_create`, SysV shared
        memory and `fallocate`, whose pages `RLIMIT_AS` does not see.
        """
        read = [*interpreter_paths(), *readable, *map(Path, (*SYSTEM_DIRS, *ETC_FILES, *DEVICES))]
        read += map(Path, SYS_READABLE)
        write = [*writable, *map(Path, DEVICES_WRITABLE), *gpu_device_files()]
        read += [Path("/proc")] if self.namespaces else map(Path, PROC_GLOBAL)
        grants = {"--read": read, "--list": listable_paths(), "--write": write}
        flags = [] if shared_memory else ["--no-shared-memory"]
        if self.bwrap:
            grants["--write"] = [*write, Path("/tmp")]
            return self._bubblewrap(writable, readable, self._launcher(grants, flags, python))
        if self.hides_host:
            grants["--hide"] = hidden_dirs()
        else:  # rivals in sight, same uid: what Landlock does not govern is denied by seccomp
            flags.append("--no-attribute-changes")
        # Landlock is then the filesystem boundary: no run without it.
        inner = self._launcher(grants, [*flags, "--require-landlock"], python)
        return [*unshare_prefix(self.unshare, self.root), *inner] if self.unshare else inner

    def _launcher(
        self, grants: dict[str, list[Path]], flags: list[str], python: list[str]
    ) -> list[str]:
        cmd = [sys.executable, "-m", LAUNCHER]
        for flag, paths in grants.items():
            for path in paths:
                cmd += [flag, str(path)]
        if self.nobody:
            cmd += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
        return [*cmd, *flags, "--", *python]

    def _bubblewrap(
        self, writable: list[Path], readable: list[Path], inner: list[str]
    ) -> list[str]:
        """A root of read-only binds: nothing of the host but what the worker needs."""
        assert self.bwrap is not None
        cmd = [self.bwrap]
        made = {Path("/")}  # directories made inside
        bound: list[Path] = []  # directories bound whole: what lies beneath them exists too

        def add(option: str, path: Path, *extra: str) -> None:
            """`option` at `path`, after its missing parents (mode 0755, not bwrap's 0700)."""
            for parent in reversed(path.parents):
                if parent not in made and not any(parent.is_relative_to(b) for b in bound):
                    cmd.extend(["--perms", "0755", "--dir", str(parent)])
                    made.add(parent)
            if option in ("--bind", "--ro-bind"):
                cmd.extend([*extra, option, str(path), str(path)])
                bound.append(path)
            else:
                cmd.extend([*extra, option, str(path)])
                made.add(path)

        for name in SYSTEM_DIRS:
            if os.path.islink(name):  # usr-merge: /lib -> usr/lib
                cmd += ["--symlink", os.readlink(name), name]
            elif os.path.isdir(name):
                add("--ro-bind", Path(name))
        for name in (*ETC_FILES, *SYS_READABLE):
            if os.path.exists(name):
                add("--ro-bind", Path(name))
        add("--dev", Path("/dev"))
        for device in gpu_device_files():  # a JAX worker's GPU; none on most machines
            cmd += ["--dev-bind", str(device), str(device)]
        add("--proc", Path("/proc"))
        for name in PROC_READ_ONLY:
            if os.path.exists(name):
                cmd += ["--ro-bind", name, name]
        add("--tmpfs", Path("/tmp"), "--perms", "1777", "--size", str(TMP_BYTES))
        needed = {p: "--ro-bind" for p in [*interpreter_paths(), *readable]}
        needed.update({p: "--bind" for p in writable})
        for path in sorted(needed, key=lambda p: len(p.parts)):  # parents before children
            add(needed[path], path)
        cmd += ["--remount-ro", "/dev", "--remount-ro", "/"]
        cmd += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
        cmd += ["--unshare-cgroup-try", "--die-with-parent", "--new-session"]
        cmd += ["--chdir", str(writable[0])]
        if self.root:
            cmd += ["--cap-drop", "ALL"]
            if self.nobody:  # the launcher drops to nobody itself
                cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        return [*cmd, "--", *inner]
