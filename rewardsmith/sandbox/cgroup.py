"""Per-run cgroups for the process sandbox: process and memory caps that hold for root, and a
clean kill.

RLIMIT_NPROC is ignored for root and counts every process of a uid (so one fork bomb would starve
the other workers of that uid). A `pids` cgroup per run caps that run alone, in the kernel, whoever
the worker runs as; `pids.events` tells afterwards whether the cap was hit. A `memory` cgroup caps
everything the run's processes hold together, shared memory included (`memfd_create` pages, SysV
segments, tmpfs files), which the per-process `RLIMIT_AS` does not count; `memory.oom_control`
tells afterwards whether the kernel killed for it. A `cpu` cgroup, where it can be made, enforces
`Limits.cpus`. Where no cgroup can be made (not root, no delegation), the caller falls back to
RLIMIT_NPROC or to `TaskWatchdog`, and without a memory cgroup the launcher denies shared memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup")
PARENT = "rewardsmith"


def _own_v1_path(controller: str) -> str | None:
    """This process's cgroup path in a v1 hierarchy, e.g. "/" for `pids`."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                return path
    except OSError:
        return None
    return None


class RunCgroup:
    """One cgroup per sandboxed run in the v1 `pids` (and, if possible, `cpu`) hierarchies."""

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs

    @classmethod
    def create(
        cls, processes: int, cpus: float | None, memory_mb: int | None = None
    ) -> RunCgroup | None:
        """Make the cgroup, or None where this machine does not let us (then use the fallbacks).

        `memory_mb` caps the run's processes together (no swap); `has_memory` says if it took.
        """
        _sweep()
        name = f"run-{uuid.uuid4().hex[:12]}"
        dirs: dict[str, Path] = {}
        settings = {
            "pids": {"pids.max": str(processes)},
            "cpu": _cpu_settings(cpus),
            "memory": _memory_settings(memory_mb),
        }
        for controller, files in settings.items():
            own = _own_v1_path(controller)
            base = V1_ROOT / controller
            if not files or own is None or not (base / "cgroup.procs").exists():
                continue
            path = base / own.lstrip("/") / PARENT / name
            try:
                path.mkdir(parents=True)
                for file, value in files.items():
                    if controller != "memory" or (path / file).exists():  # memsw: swap accounting
                        (path / file).write_text(value)
                dirs[controller] = path
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
        if "pids" not in dirs:
            cls(dirs).remove()
            return None
        return cls(dirs)

    @property
    def has_memory(self) -> bool:
        """Whether a memory cgroup bounds the run (shared memory counted)."""
        return "memory" in self.dirs

    def memory_limit_hit(self) -> bool:
        """Whether the kernel's OOM killer ended a process of the run for the memory cap."""
        return self._counter("memory", "memory.oom_control", "oom_kill") > 0

    def limit_hit(self) -> str | None:
        """Which cap ended the run, if one did: "processes" or "memory"."""
        if self.process_limit_hit():
            return "processes"
        return "memory" if self.memory_limit_hit() else None

    def _counter(self, controller: str, file: str, key: str) -> int:
        """A `key value` counter from one of the run's cgroup files; 0 if it cannot be read."""
        try:
            for line in (self.dirs[controller] / file).read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
        except (OSError, ValueError, KeyError):
            return 0
        return 0

    def enter(self) -> None:
        """Move the calling process here; runs in the child before exec (`preexec_fn`)."""
        pid = str(os.getpid())
        for path in self.dirs.values():
            (path / "cgroup.procs").write_text(pid)

    def process_limit_hit(self) -> bool:
        """Whether a fork or thread creation was refused because of `pids.max`."""
        return self._counter("pids", "pids.events", "max") > 0

    def pids(self) -> list[int]:
        """The processes in the run's `pids` cgroup now; empty if it cannot be read."""
        try:
            text = (self.dirs["pids"] / "cgroup.procs").read_text()
        except (OSError, KeyError):
            return []
        return [int(p) for p in text.split()]

    def kill_all(self) -> None:
        """SIGKILL everything left in the cgroup, even processes that left the process group."""
        for _ in range(50):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)

    def remove(self) -> None:
        """Kill what is left, then delete the cgroup directories (waiting up to 5 s for exits)."""
        self.kill_all()
        for path in self.dirs.values():
            for _ in range(250):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the last tasks are still exiting


def _cpu_settings(cpus: float | None) -> dict[str, str]:
    if cpus is None:
        return {}
    period = 100_000
    return {
        "cpu.cfs_period_us": str(period),
        "cpu.cfs_quota_us": str(max(int(cpus * period), 1000)),
    }


def memory_cap_mb(memory_mb: int) -> int:
    """The cap on a run's processes together: the per-process limit plus headroom for the
    reward process, interpreter copies and page cache (Docker's memory cgroup uses the same)."""
    return int(memory_mb * 1.25) + 256


def _memory_settings(memory_mb: int | None) -> dict[str, str]:
    if memory_mb is None:
        return {}
    cap = str(memory_cap_mb(memory_mb) * 1024 * 1024)
    # memsw (memory + swap) after memory: it may never be below it. Without swap accounting the
    # file is absent and memory alone is the cap.
    return {"memory.limit_in_bytes": cap, "memory.memsw.limit_in_bytes": cap}


def _sweep(min_age_s: float = 300.0) -> None:
    """Remove empty run cgroups left by orchestrators that were killed before cleaning up.

    Only old ones: a cgroup made a moment ago by another run is empty until its worker enters.
    """
    now = time.time()
    for controller in ("pids", "cpu", "memory"):
        own = _own_v1_path(controller)
        if own is None:
            continue
        parent = V1_ROOT / controller / own.lstrip("/") / PARENT
        with contextlib.suppress(OSError):
            for path in parent.glob("run-*"):
                with contextlib.suppress(OSError, ValueError):
                    empty = not (path / "cgroup.procs").read_text().split()
                    if empty and now - path.stat().st_mtime > min_age_s:
                        path.rmdir()


def count_tasks(root_pid: int) -> int:
    """Threads of `root_pid` and all its descendants, read from /proc (for the watchdog)."""
    children: dict[int, list[int]] = {}
    threads: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        pid, ppid = int(entry.name), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        threads[pid] = int(fields[17])
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += threads.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total
