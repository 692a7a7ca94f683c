"""The types every sandbox backend shares: limits, the outcome of a run, and the backend protocol."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol


class SandboxUnavailable(ValueError):
    """No mechanism here can confine reward code, and nobody asked to run it unconfined."""

    def __init__(self) -> None:
        super().__init__(
            "refusing to run reward code unconfined: neither bubblewrap nor Landlock works here. "
            "Install bubblewrap (apt-get install bubblewrap) or Docker, use a kernel with "
            "Landlock (Linux 5.13+, `landlock` in the LSM list), or pass `--sandbox none` to run "
            "it with resource limits only"
        )


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
    # What the writable directory may hold beyond its inputs (`runner.run_job` enforces both on
    # every backend). A CartPole or HalfCheetah training job writes 0.2-2.3 MB in ~20 entries.
    disk_mb: int = 1024
    disk_files: int = 10_000

    def within(self, *, wall_s: float, disk_mb: int, disk_files: int) -> Limits:
        """These limits, with a check program's own wall clock and disk caps where smaller."""
        return replace(
            self,
            wall_s=min(self.wall_s, wall_s),
            disk_mb=min(self.disk_mb, disk_mb),
            disk_files=min(self.disk_files, disk_files),
        )


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
    # What confined it, e.g. ["bubblewrap", "landlock v7", "seccomp", "uid nobody", ...]; warnings
    # carry only what is missing or weaker.
    mechanisms: list[str] = field(default_factory=list)

    @property
    def signal(self) -> int | None:
        """The signal that ended the worker, also where a wrapper reported it as 128 + N."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        if self.returncode is not None and self.returncode > 128:
            return self.returncode - 128  # killed inside a wrapper (bwrap, unshare, Docker)
        return None


class Sandbox(Protocol):
    """A backend that runs worker modules confined (`ProcessSandbox`, `DockerSandbox`)."""

    name: str

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun:
        """Run `python -m module *args` with `writable` the only writable paths, within `limits`.

        `on_poll` is called while it waits (an exception from it kills the run and passes);
        `readable` are extra read-only paths. A crash, timeout or limit comes back in the
        `SandboxRun` for the caller to classify.
        """
        ...
