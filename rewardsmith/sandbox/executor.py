"""The process sandbox: run a worker module with an environment allow-list, limits and a timeout.

Isolation layers, strongest available first (docs/sandbox.md lists each limit and its test):

- bubblewrap: a read-only view of the filesystem except the job directory, /tmp, /run and the
  home directory replaced by small empty tmpfs, /proc/sys read-only, and new network (only `lo`),
  PID, IPC and UTS namespaces; as root, every capability dropped and the worker run as `nobody`.
- without bubblewrap, `unshare` (root: new network and PID namespaces with their own /proc; not
  root: the same inside a user namespace), with a warning that the filesystem is writable.
- always: rlimits (address space, file size, open files, processes, core dumps, CPU time), a
  `pids` cgroup per run where one can be made (the process cap that holds for root), a new session
  whose process group (and cgroup) is killed on timeout, and output captured with a cap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rewardsmith.sandbox.cgroup import RunCgroup, count_tasks

# Host variables a worker may see; everything else (API keys included) is withheld.
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
NOBODY = 65534
TMP_BYTES = 64 * 1024 * 1024  # the worker's /tmp; its own scratch space is the job directory
PROCESS_LIMIT_GRACE_S = 3.0  # after a refused fork, time for the worker to report it itself


@dataclass
class Limits:
    """Resource limits for one sandboxed run (the worker and all its children)."""

    wall_s: float = 3600.0
    memory_mb: int = 6144
    cpu_s: int | None = None
    cpus: float | None = None  # CPU share (cgroup quota / Docker nano_cpus); None: unlimited
    file_mb: int = 1024
    open_files: int = 512
    processes: int = 256
    output_bytes: int = 1_000_000


@dataclass
class SandboxRun:
    """What happened to a sandboxed process; the caller classifies it into an error category."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    output: str
    output_bytes: int
    backend: str
    warnings: list[str] = field(default_factory=list)
    limit_hit: str | None = None  # "processes" or "memory" when the backend saw that limit end it

    @property
    def signal(self) -> int | None:
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        if self.returncode is not None and self.returncode > 128:
            return self.returncode - 128  # killed inside a wrapper (bwrap, unshare, Docker)
        return None


def worker_environment(home: Path) -> dict[str, str]:
    """The worker's whole environment: an allow-list of host variables plus fixed settings."""
    env = {key: os.environ[key] for key in ENV_ALLOW_LIST if key in os.environ}
    env.update(
        {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(home),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONNOUSERSITE": "1",
            "PYTHONSAFEPATH": "1",  # never import from the (worker-writable) working directory
            "PYTHONFAULTHANDLER": "1",  # a segfault prints the Python stack, the reward's included
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "MUJOCO_GL": "disable",
        }
    )
    return env


def rlimits(limits: Limits, nproc: int) -> dict[int, int]:
    """The rlimits every backend applies (Docker as `ulimits`)."""
    mb = 1024 * 1024
    values = {
        resource.RLIMIT_AS: limits.memory_mb * mb,
        resource.RLIMIT_FSIZE: limits.file_mb * mb,
        resource.RLIMIT_NOFILE: limits.open_files,
        resource.RLIMIT_NPROC: nproc,
        resource.RLIMIT_CORE: 0,
    }
    if limits.cpu_s is not None:
        values[resource.RLIMIT_CPU] = limits.cpu_s
    return values


def _preexec(limits: Limits, nproc: int, cgroup: RunCgroup | None) -> Callable[[], None]:
    def apply() -> None:
        if cgroup is not None:
            cgroup.enter()  # before exec, so not even the first fork escapes the cap
        for kind, value in rlimits(limits, nproc).items():
            hard = value + 5 if kind == resource.RLIMIT_CPU else value  # SIGXCPU first, then KILL
            resource.setrlimit(kind, (value, hard))

    return apply


class CappedOutput:
    """Keeps the first and last half of the cap of a byte stream, counting every byte."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        half = self.cap // 2
        self.total += len(chunk)
        room = half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > half:
            del self.tail[: len(self.tail) - half]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        body = bytes(self.head)
        if self.truncated:
            body += f"\n[... output truncated: {self.total} bytes in all ...]\n".encode()
        return (body + bytes(self.tail)).decode(errors="replace")

    def warnings(self) -> list[str]:
        if not self.truncated:
            return []
        return [
            f"output truncated: the worker wrote {self.total} bytes; "
            f"the first and last {self.cap // 2} are kept"
        ]


class CappedReader(threading.Thread):
    """Drains a stream of chunks on a thread into a `CappedOutput`, so a flood costs no memory."""

    def __init__(self, chunks: Iterable[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self.chunks = chunks
        self.output = CappedOutput(cap)

    def run(self) -> None:
        with contextlib.suppress(Exception):  # a stream torn down by a kill ends the output
            for chunk in self.chunks:
                self.output.feed(chunk)


def pipe_chunks(stream: object) -> Iterator[bytes]:
    read = stream.read1  # type: ignore[attr-defined]
    while chunk := read(65536):
        yield chunk


def interpreter_paths() -> list[Path]:
    """Paths the worker must read: the interpreter's prefixes and the package's source."""
    import rewardsmith

    package_root = Path(rewardsmith.__file__).resolve().parent.parent
    paths = {Path(sys.prefix), Path(sys.base_prefix), package_root}
    return sorted(paths)


def traversable_by_others(path: Path) -> bool:
    """Whether an unprivileged user (`nobody`) can reach `path` through all its parents."""
    for parent in [path, *path.parents]:
        try:
            if not parent.stat().st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Drop paths inside another path of the set; parents first."""
    ordered = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in ordered:
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


@functools.lru_cache(maxsize=4)
def bwrap_works(bwrap: str) -> bool:
    """Whether bubblewrap can make its namespaces here (not in every container it can)."""
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net"]
    probe += ["--unshare-pid", "--die-with-parent", "--", "/bin/true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class ProcessSandbox:
    """The default backend: a local subprocess, isolated as far as this machine allows."""

    name = "process"

    def __init__(
        self, use_bwrap: bool | None = None, use_cgroup: bool = True, drop_root: bool = True
    ) -> None:
        found = shutil.which("bwrap") if use_bwrap is not False else None
        self.bwrap = found if found and bwrap_works(found) else None
        self.fix = (
            "bubblewrap is installed but cannot create namespaces here"
            if found and not self.bwrap
            else "install bubblewrap"
        )
        self.unshare = shutil.which("unshare")
        self.setpriv = shutil.which("setpriv")
        self.use_cgroup = use_cgroup
        self.root = os.geteuid() == 0
        self.drop_root = drop_root and self.root

    def runs_as_nobody(self, paths: Iterable[Path] = ()) -> bool:
        """As root, the worker runs as `nobody`: bwrap re-creates what nobody could not reach."""
        if not self.drop_root:
            return False
        if self.bwrap:
            return self.setpriv is not None
        return self.unshare is not None and all(
            traversable_by_others(p) for p in [*interpreter_paths(), *paths]
        )

    def isolation(self) -> str:
        """One line on what this backend enforces here, for `doctor` and `--sandbox auto`."""
        if self.runs_as_nobody():
            who = "as nobody"
        elif self.root:
            who = "as root without capabilities"
        else:
            who = "as this user, in a user namespace"
        if self.bwrap:
            return (
                f"bubblewrap {who}: read-only filesystem except the job directory, no network, "
                "own PID namespace"
            )
        if self.unshare:
            return (
                f"unshare {who}: no network, own PID namespace; the filesystem is NOT read-only "
                f"({self.fix})"
            )
        return f"rlimits only: network and filesystem are NOT isolated ({self.fix})"

    def _bwrap(
        self, python: list[str], writable: list[Path], readable: list[Path], nobody: bool
    ) -> list[str]:
        home = Path(os.environ.get("HOME", "/"))
        needed = {p: "--ro-bind" for p in [*interpreter_paths(), *readable]}
        needed.update({p: "--bind" for p in writable})
        hidden = [Path("/tmp"), Path("/run"), *([home] if home != Path("/") else [])]
        if nobody:  # hide what nobody could not traverse; the needed paths are re-bound below
            for path in needed:
                hidden += [p for p in path.parents if p.exists() and not p.stat().st_mode & 0o001]
        hidden = [h for h in _outermost(hidden) if h.is_dir()]
        assert self.bwrap is not None
        cmd = [
            self.bwrap,
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--remount-ro",
            "/dev",
            "--proc",
            "/proc",
        ]
        for proc_path in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"):
            if os.path.exists(proc_path):  # writable by uid 0 even without capabilities
                cmd += ["--ro-bind", proc_path, proc_path]
        for path in hidden:
            scratch = path == Path("/tmp")  # writable by everyone, sticky, like a real /tmp
            cmd += [
                "--perms",
                "1777" if scratch else "0755",
                "--size",
                str(TMP_BYTES if scratch else 1 << 20),
            ]
            cmd += ["--tmpfs", str(path)]
        made: set[Path] = set()
        bound: list[Path] = []
        for path in sorted(needed, key=lambda p: len(p.parts)):  # parents before children
            for parent in reversed(path.parents):
                inside_hidden = any(parent != h and parent.is_relative_to(h) for h in hidden)
                inside_bound = any(parent.is_relative_to(b) for b in bound)
                if inside_hidden and not inside_bound and parent not in made:
                    cmd += ["--perms", "0755", "--dir", str(parent)]  # bwrap would make them 0700
                    made.add(parent)
            cmd += [needed[path], str(path), str(path)]
            bound.append(path)
        for path in hidden:
            if path != Path("/tmp"):
                cmd += ["--remount-ro", str(path)]
        cmd += [
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        cmd += ["--die-with-parent", "--new-session", "--chdir", str(writable[0])]
        if self.root:
            cmd += ["--cap-drop", "ALL"]
            if nobody:
                cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        cmd += ["--"]
        if nobody:
            assert self.setpriv is not None
            cmd += [self.setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
        return cmd + python

    def command(
        self, module: str, args: list[str], writable: list[Path], readable: list[Path]
    ) -> tuple[list[str], list[str]]:
        """The command line for one run, and warnings about isolation this machine cannot give."""
        python = [sys.executable, "-m", module, *args]
        nobody = self.runs_as_nobody([*writable, *readable])
        if self.bwrap:
            return self._bwrap(python, writable, readable, nobody), []
        if self.unshare:
            cmd = [
                self.unshare,
                "--net",
                "--pid",
                "--fork",
                "--kill-child",
                "--mount-proc",
                "--ipc",
                "--uts",
            ]
            if not self.root:
                cmd.insert(1, "--map-root-user")
            elif nobody:
                cmd += [f"--setuid={NOBODY}", f"--setgid={NOBODY}"]
            cmd.append("--")
            if self.root and not nobody and self.setpriv:  # root, but without any capability
                cmd += [
                    self.setpriv,
                    "--bounding-set=-all",
                    "--inh-caps=-all",
                    "--no-new-privs",
                    "--",
                ]
            return [*cmd, *python], [self.isolation()]
        return python, [self.isolation()]

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun:
        readable = readable or []
        cmd, warnings = self.command(module, args, writable, readable)
        if self.runs_as_nobody([*writable, *readable]):
            for path in writable:
                os.chown(path, NOBODY, NOBODY)
                os.chmod(path, 0o755)  # bwrap enters it before the uid change, without capabilities
        cgroup = RunCgroup.create(limits.processes, limits.cpus) if self.use_cgroup else None
        non_root = not self.root or self.runs_as_nobody([*writable, *readable])
        # With a cgroup the per-run cap is exact; RLIMIT_NPROC (per uid, shared by all workers of
        # that uid) is then only a generous backstop.
        nproc = limits.processes * 4 if cgroup is not None else limits.processes
        watchdog = cgroup is None and not non_root
        if watchdog:
            warnings.append(
                "no cgroup and the worker runs as root: "
                "processes are capped by a polling watchdog only"
            )
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=worker_environment(writable[0]),
                cwd=writable[0],
                start_new_session=True,
                preexec_fn=_preexec(limits, nproc, cgroup),
            )
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            raise
        reader = CappedReader(pipe_chunks(proc.stdout), limits.output_bytes)
        reader.start()
        timed_out, limit_hit, refused_at = False, None, None
        try:
            while True:
                try:
                    proc.wait(timeout=0.25)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if on_poll is not None:
                    on_poll()
                now = time.monotonic()
                if now - start > limits.wall_s:
                    timed_out = True
                    break
                if watchdog and count_tasks(proc.pid) > limits.processes:
                    limit_hit = "processes"
                    break
                if cgroup is not None and cgroup.process_limit_hit():
                    refused_at = refused_at or now
                    if now - refused_at > PROCESS_LIMIT_GRACE_S:
                        break  # a fork bomb that swallows its errors: end it
        finally:
            _kill_group(proc)
            if cgroup is not None:
                if cgroup.process_limit_hit():
                    limit_hit = "processes"
                cgroup.remove()
        reader.join(timeout=5)
        output = reader.output
        return SandboxRun(
            returncode=proc.returncode,
            timed_out=timed_out,
            wall_s=time.monotonic() - start,
            output=output.text(),
            output_bytes=output.total,
            backend=self.name,
            warnings=warnings + output.warnings(),
            limit_hit=limit_hit,
        )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker's whole process group (it leads its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
