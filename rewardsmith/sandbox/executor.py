"""The process sandbox: run a worker module with an environment allow-list, limits and a timeout.

Isolation layers, strongest available first: bubblewrap (read-only root, only the job directory
writable, no network, own PID namespace), else `unshare -n` for the network; always rlimits, a
new session whose whole process group is killed on timeout, and capped output.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Host variables a worker may see; everything else (API keys included) is withheld.
ENV_ALLOW_LIST = ("LANG", "LC_ALL", "TZ", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclass
class Limits:
    """Resource limits for one sandboxed process (and its children)."""

    wall_s: float = 3600.0
    memory_mb: int = 6144
    cpu_s: int | None = None
    file_mb: int = 1024
    open_files: int = 512
    processes: int = 256
    output_bytes: int = 1_000_000


@dataclass
class SandboxRun:
    """What happened to a sandboxed process; classification into error categories is the caller's."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    output: str
    output_bytes: int
    backend: str
    warnings: list[str] = field(default_factory=list)

    @property
    def signal(self) -> int | None:
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        if self.returncode is not None and self.returncode > 128:
            return self.returncode - 128  # killed inside a shell-like wrapper (unshare, bwrap)
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
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "MUJOCO_GL": "disable",
        }
    )
    return env


def _set_limits(limits: Limits) -> Callable[[], None]:
    def apply() -> None:
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_mb * mb, limits.memory_mb * mb))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb * mb, limits.file_mb * mb))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if limits.cpu_s is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))

    return apply


class _CappedReader(threading.Thread):
    """Drains a pipe, keeping the first and last half of the cap and counting every byte."""

    def __init__(self, stream: object, cap: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap = stream, cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def run(self) -> None:
        half = self.cap // 2
        read = self.stream.read1  # type: ignore[attr-defined]
        while chunk := read(65536):
            self.total += len(chunk)
            room = half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            self.tail += chunk
            if len(self.tail) > half:
                del self.tail[: len(self.tail) - half]

    def text(self) -> str:
        body = bytes(self.head)
        if self.total > len(self.head) + len(self.tail):
            body += f"\n[... output truncated: {self.total} bytes in all ...]\n".encode()
        return (body + bytes(self.tail)).decode(errors="replace")


def _interpreter_paths() -> list[Path]:
    """Paths the worker must read: the interpreter's prefix and the package's source."""
    import rewardsmith

    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(rewardsmith.__file__).resolve().parent.parent}
    return sorted(paths)


class ProcessSandbox:
    """The default backend: a local subprocess, isolated as far as this machine allows."""

    name = "process"

    def __init__(self, use_bwrap: bool | None = None) -> None:
        self.bwrap = shutil.which("bwrap") if use_bwrap is not False else None
        self.unshare = shutil.which("unshare")

    def isolation(self) -> str:
        if self.bwrap:
            return "bubblewrap: read-only filesystem except the job directory, no network, own PID namespace"
        if self.unshare and os.geteuid() == 0:
            return "unshare -n: no network; the filesystem is NOT read-only (install bubblewrap)"
        return "rlimits only: network and filesystem are NOT isolated (install bubblewrap)"

    def command(
        self, module: str, args: list[str], writable: list[Path], readable: list[Path]
    ) -> tuple[list[str], list[str]]:
        python = [sys.executable, "-m", module, *args]
        if self.bwrap:
            cmd = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
            for path in _interpreter_paths():
                cmd += ["--ro-bind", str(path), str(path)]  # re-bind: /tmp virtualenvs stay visible
            for path in readable:
                cmd += ["--ro-bind", str(path), str(path)]
            for path in writable:
                cmd += ["--bind", str(path), str(path)]
            cmd += ["--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
            cmd += ["--chdir", str(writable[0]), "--"]
            return cmd + python, []
        if self.unshare and os.geteuid() == 0:
            return [self.unshare, "-n", "--", *python], [self.isolation()]
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
        cmd, warnings = self.command(module, args, writable, readable or [])
        start = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=worker_environment(writable[0]),
            cwd=writable[0],
            start_new_session=True,
            preexec_fn=_set_limits(limits),
        )
        reader = _CappedReader(proc.stdout, limits.output_bytes)
        reader.start()
        timed_out = False
        try:
            while True:
                try:
                    proc.wait(timeout=0.25)
                    break
                except subprocess.TimeoutExpired:
                    if on_poll is not None:
                        on_poll()
                    if time.monotonic() - start > limits.wall_s:
                        timed_out = True
                        break
        finally:
            _kill_group(proc)
        reader.join(timeout=5)
        return SandboxRun(
            returncode=proc.returncode,
            timed_out=timed_out,
            wall_s=time.monotonic() - start,
            output=reader.text(),
            output_bytes=reader.total,
            backend=self.name,
            warnings=warnings,
        )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker's whole process group (it leads its own session), then reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
