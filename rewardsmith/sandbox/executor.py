"""The process sandbox: run a worker module with an environment allow-list, limits and a timeout.

Isolation layers (docs/sandbox.md lists each limit and its test). Every worker starts through the
confine launcher (`rewardsmith/sandbox/confine.py`), which applies, inside whatever wraps it:

- Landlock where the kernel has it: the interpreter, packages and system libraries readable, the
  job directory the only writable place, nothing else of the host readable; no TCP;
- a seccomp filter: no network sockets, no Unix socket connects, no ptrace, mounts, namespaces,
  bpf or keyrings;
- as root, the uid `nobody` (no capabilities), else no capability at all.

Around it, the strongest of:

- bubblewrap: a minimal root built from read-only binds (/usr and the /lib dirs, a few /etc
  files, the interpreter, packages and readable dirs), the job directory, a private /tmp, /dev
  and /proc; new network (only `lo`), PID, IPC and UTS namespaces;
- without bubblewrap, `unshare` (root: new network and PID namespaces with their own /proc; not
  root: the same inside a user namespace), and the launcher covers /home, /root, /tmp, /var, /run
  and the like with empty tmpfs in a private mount namespace, putting back what the worker needs.

Where neither bubblewrap nor Landlock works, `run` refuses (`SandboxUnavailable`) unless the
sandbox was made with `unconfined=True` (`--sandbox none`). Always: rlimits (address space, file
size, open files, processes, core dumps, CPU time), a `pids` cgroup per run where one can be
made, a new session whose process group (and cgroup) is killed on timeout, and output captured
with a cap.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from typing_extensions import override

from rewardsmith.sandbox.cgroup import RunCgroup, count_tasks
from rewardsmith.sandbox.landlock import landlock_abi
from rewardsmith.sandbox.process_isolation import NOBODY as NOBODY
from rewardsmith.sandbox.process_isolation import TMP_BYTES as TMP_BYTES
from rewardsmith.sandbox.process_isolation import Isolation, bwrap_works, unshare_works
from rewardsmith.sandbox.process_isolation import interpreter_paths as interpreter_paths
from rewardsmith.sandbox.types import Limits, SandboxRun, SandboxUnavailable

# Host variables a worker may see; everything else (API keys included) is withheld. XLA_FLAGS is
# the user's say in how the JAX backend's programs compile (optimisation level, device count).
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "XLA_FLAGS")
PROCESS_LIMIT_GRACE_S = 3.0  # after a refused fork, time for the worker to report it itself


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
        """Count `chunk`; keep what still fits in the head, and the last half-cap in the tail."""
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
        """Whether bytes between the head and the tail were dropped."""
        return self.total > len(self.head) + len(self.tail)

    def text(self) -> str:
        """The kept output, decoded leniently, with a marker where bytes were dropped."""
        body = bytes(self.head)
        if self.truncated:
            body += f"\n[... output truncated: {self.total} bytes in all ...]\n".encode()
        return (body + bytes(self.tail)).decode(errors="replace")

    def warnings(self) -> list[str]:
        """The run's warning that its output was cut, or none."""
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

    @override
    def run(self) -> None:
        with contextlib.suppress(Exception):  # a stream torn down by a kill ends the output
            for chunk in self.chunks:
                self.output.feed(chunk)


def pipe_chunks(stream: object) -> Iterator[bytes]:
    """A pipe's bytes as they arrive (`read1` does not wait for a full buffer), until EOF."""
    read = stream.read1  # type: ignore[attr-defined]
    while chunk := read(65536):
        yield chunk


class ProcessSandbox:
    """The default backend: a local subprocess, isolated as far as this machine allows.

    `unconfined=True` is `--sandbox none`: the worker runs as this user with resource limits
    only, and every run says so. Without it, `run` refuses where neither bubblewrap nor Landlock
    works.
    """

    name = "process"

    def __init__(
        self,
        use_bwrap: bool | None = None,
        use_cgroup: bool = True,
        drop_root: bool = True,
        unconfined: bool = False,
    ) -> None:
        self.unconfined = unconfined
        if unconfined:
            self.name = "none"
        found = shutil.which("bwrap") if use_bwrap is not False and not unconfined else None
        self.bwrap = found if found and bwrap_works(found) else None
        self.fix = (
            "bubblewrap is installed but cannot create namespaces here"
            if found and not self.bwrap
            else "install bubblewrap"
        )
        unshare = shutil.which("unshare") if not unconfined else None
        self.root = os.geteuid() == 0
        self.unshare = unshare if unshare and unshare_works(unshare, self.root) else None
        self.landlock = 0 if unconfined else landlock_abi()
        self.use_cgroup = use_cgroup
        self.drop_root = drop_root and self.root and not unconfined
        self.plan = Isolation(
            bwrap=self.bwrap,
            unshare=None if self.bwrap else self.unshare,
            landlock=self.landlock,
            root=self.root,
            nobody=self.drop_root,
        )

    @property
    def confined(self) -> bool:
        """Whether something here confines the filesystem: bubblewrap or Landlock."""
        return not self.unconfined and (self.bwrap is not None or self.landlock > 0)

    def runs_as_nobody(self, paths: Iterable[Path] = ()) -> bool:
        """As root, the worker runs as `nobody`; what nobody could not reach is re-bound."""
        return self.drop_root and self.confined

    def mechanisms(self) -> list[str]:
        """The mechanisms in force, for `doctor`, `--sandbox auto` and the run's record."""
        if self.unconfined:
            return ["none"]
        return self.plan.mechanisms() if self.confined else []

    def isolation(self) -> str:
        """One line on what this backend enforces here, for `doctor` and `--sandbox auto`."""
        if self.unconfined:
            who = "as root" if self.root else "as this user"
            return (
                f"UNCONFINED (--sandbox none): reward code runs {who} with resource limits only; "
                "it can read and write whatever that user can, and reach the network"
            )
        if not self.confined:
            return f"refuses to run: neither bubblewrap nor Landlock works here ({self.fix})"
        layers = " + ".join(self.mechanisms())
        if self.bwrap:
            return (
                f"{layers}: a minimal read-only root (interpreter, packages, its own directory), "
                "no network, own PID namespace"
            )
        net = "no network" if self.unshare else "no network sockets (seccomp; no namespace here)"
        return (
            f"{layers}: read-only filesystem except the job directory, other runs, homes and "
            f"socket files out of reach, {net}"
        )

    def command(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        readable: list[Path],
        *,
        shared_memory: bool = True,
    ) -> tuple[list[str], list[str]]:
        """The command line for one run, and warnings about isolation this machine cannot give.

        `shared_memory=False` where no memory cgroup counts memfd and SysV segments: denied then.
        """
        python = [sys.executable, "-m", module, *args]
        if self.unconfined:
            return python, [self.isolation()]
        if not self.confined:
            raise SandboxUnavailable()
        warnings = []
        if not self.plan.namespaces:
            warnings.append(
                "no network or PID namespace here: network sockets are refused by seccomp and "
                "Landlock, and the worker can see this user's other processes"
            )
        if not self.plan.hides_host:
            warnings.append(
                "host directories cannot be hidden here (not root, no user namespaces): other "
                "candidates' folders are visible to this one, which runs as the same user (it "
                "cannot write them, nor change their modes or attributes, but can read their "
                "names and sizes)"
            )
        command = self.plan.command(python, writable, readable, shared_memory=shared_memory)
        return command, warnings

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun:
        """Run `python -m module *args` until it exits, hits `limits` or `on_poll` raises.

        Its process group and cgroup are killed in every case. Refuses (`SandboxUnavailable`)
        where nothing confines it, unless made `unconfined`.
        """
        readable = readable or []
        cgroup = (
            RunCgroup.create(limits.processes, limits.cpus, limits.memory_mb)
            if self.use_cgroup
            else None
        )
        try:
            return self._run_in(cgroup, module, args, writable, readable, limits, on_poll)
        finally:
            if cgroup is not None:
                cgroup.remove()

    def _run_in(
        self,
        cgroup: RunCgroup | None,
        module: str,
        args: list[str],
        writable: list[Path],
        readable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None,
    ) -> SandboxRun:
        """`run` inside its cgroup (None where none can be made)."""
        memory_cgroup = cgroup is not None and cgroup.has_memory
        cmd, warnings = self.command(module, args, writable, readable, shared_memory=memory_cgroup)
        if self.runs_as_nobody([*writable, *readable]):
            for path in writable:
                os.chown(path, NOBODY, NOBODY)
                os.chmod(path, 0o755)  # entered before the uid change, without capabilities
        # With a cgroup the per-run cap is exact; RLIMIT_NPROC (per uid, shared by all workers of
        # that uid) is then only a generous backstop. As root without one, a watchdog counts.
        nproc = limits.processes * 4 if cgroup is not None else limits.processes
        watchdog = cgroup is None and self.root and not self.runs_as_nobody()
        if watchdog:
            warnings.append(
                "no cgroup and the worker runs as root: "
                "processes are capped by a polling watchdog only"
            )
        start = time.monotonic()
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
        reader = CappedReader(pipe_chunks(proc.stdout), limits.output_bytes)
        reader.start()
        try:
            timed_out, limit_hit = _watch(proc, start, limits, on_poll, cgroup, watchdog)
        finally:
            _kill_group(proc)
        if cgroup is not None:
            limit_hit = cgroup.limit_hit() or limit_hit
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
            mechanisms=self.mechanisms() + _memory_mechanism(cgroup, self.unconfined),
        )


def _watch(
    proc: subprocess.Popen[bytes],
    start: float,
    limits: Limits,
    on_poll: Callable[[], None] | None,
    cgroup: RunCgroup | None,
    watchdog: bool,
) -> tuple[bool, str | None]:
    """Poll until the worker exits, its time is up, or a process cap ends it: (timed out, limit).

    An exception from `on_poll` (a cancel) passes to the caller, which kills the worker."""
    refused_at = None
    while True:
        try:
            proc.wait(timeout=0.25)
            return False, None
        except subprocess.TimeoutExpired:
            pass
        if on_poll is not None:
            on_poll()
        now = time.monotonic()
        if now - start > limits.wall_s:
            return True, None
        if watchdog and count_tasks(proc.pid) > limits.processes:
            return False, "processes"
        if cgroup is not None and cgroup.process_limit_hit():
            refused_at = refused_at or now
            if now - refused_at > PROCESS_LIMIT_GRACE_S:
                return False, None  # a fork bomb that swallows its errors: end it


def _memory_mechanism(cgroup: RunCgroup | None, unconfined: bool) -> list[str]:
    if cgroup is not None and cgroup.has_memory:
        return ["memory cgroup"]
    return [] if unconfined else ["shared memory denied"]


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker's whole process group (it leads its own session), then reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
