"""Choosing a sandbox backend: `auto` prefers Docker when its engine and image are ready.

Also what `rewardsmith doctor` reports: for each backend, whether it is usable here, which of its
isolation layers this machine provides, and (optionally) what a live worker actually sees.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits, Sandbox, SandboxUnavailable

PROBE_MODULE = "rewardsmith.programs.docker_probe"


@dataclass
class ChosenSandbox:
    """The backend `choose_sandbox` picked, and why (the reason is shown to the user and kept)."""

    sandbox: Sandbox
    reason: str

    def describe(self) -> str:
        """The one line the loop prints at start: backend name, then the reason in brackets."""
        return f"{self.sandbox.name} ({self.reason})"


def choose_sandbox(name: str = "auto", run_id: str | None = None) -> ChosenSandbox:
    """The backend for `--sandbox NAME`, with the reason it was chosen.

    `auto` takes Docker when it is ready, else the process backend if bubblewrap or Landlock
    confines it here, else refuses (`SandboxUnavailable`): never anything weaker. `none` is the
    explicit opt-out: reward code runs unconfined, and a one-line warning says so. `run_id`
    labels Docker containers, so a sweep can tell whose they are.
    """
    if name not in ("auto", "process", "docker", "none"):
        raise ValueError(f"unknown sandbox {name!r}; choose auto, process, docker or none")
    if name == "none":
        unconfined = ProcessSandbox(unconfined=True)
        print(f"WARNING: {unconfined.isolation()}", file=sys.stderr)
        return ChosenSandbox(unconfined, unconfined.isolation())
    if name in ("auto", "docker"):
        from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status

        ready, why = docker_status()
        if ready:
            return ChosenSandbox(DockerSandbox(run_id=run_id), "engine and worker image ready")
        if name == "docker":
            raise ValueError(f"the Docker sandbox is not usable: {why}; run `rewardsmith doctor`")
        process = ProcessSandbox()
        if not process.confined:
            raise SandboxUnavailable()
        return ChosenSandbox(process, f"Docker not usable: {why}; {process.isolation()}")
    process = ProcessSandbox()
    if not process.confined:
        raise SandboxUnavailable()
    return ChosenSandbox(process, process.isolation())


@dataclass
class BackendStatus:
    """One backend as `doctor` shows it."""

    name: str
    usable: bool
    summary: str
    layers: dict[str, str] = field(default_factory=dict)
    live: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form `rewardsmith doctor --json` prints."""
        return {
            "name": self.name,
            "usable": self.usable,
            "summary": self.summary,
            "layers": self.layers,
            "live": self.live,
        }


def _bwrap_version(path: str) -> str:
    try:
        return subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "version unknown"


def process_status() -> BackendStatus:
    """Usable where bubblewrap or Landlock confines it; which mechanisms are in force here."""
    from rewardsmith.sandbox.cgroup import RunCgroup
    from rewardsmith.sandbox.process_isolation import interpreter_paths, listable_paths

    sandbox = ProcessSandbox()
    cgroup = RunCgroup.create(8, None, 64)
    if cgroup is not None:
        cgroup.remove()
    memory = cgroup is not None and cgroup.has_memory
    bwrap, landlock = sandbox.bwrap, sandbox.landlock
    if bwrap:
        version = _bwrap_version(bwrap)
        filesystem = f"minimal read-only root: interpreter, packages, job dir ({bwrap}, {version})"
    elif landlock:
        filesystem = (
            "Landlock: read-only except the job dir; other runs, homes, /var/tmp unreadable"
        )
    else:
        filesystem = "NOT confined: runs refuse (install bubblewrap, or a kernel with Landlock)"
    if bwrap:
        network = "none: bubblewrap --unshare-net"
    elif sandbox.unshare:
        network = "none: unshare --net; seccomp refuses network sockets too"
    else:
        network = "no namespace: seccomp refuses network sockets and Landlock TCP"
    layers = {
        "in force": ", ".join(sandbox.mechanisms()) or "nothing: runs refuse",
        "filesystem": filesystem,
        "landlock": f"ABI {landlock}" if landlock else "not available in this kernel",
        "seccomp": "no network sockets or Unix connects; no ptrace, mount, namespaces, bpf, "
        "keyrings, io_uring",
        "network": network,
        "user": "nobody (uid 65534)"
        if sandbox.runs_as_nobody()
        else ("root without capabilities" if sandbox.root else "this user, no capabilities"),
        "processes": "pids cgroup per run"
        if cgroup is not None
        else (
            "RLIMIT_NPROC"
            if not sandbox.root or sandbox.runs_as_nobody()
            else "polling watchdog only"
        ),
        "memory": "a memory cgroup per run (shared memory counted) and RLIMIT_AS"
        if memory
        else "RLIMIT_AS; no memory cgroup here, so memfd and SysV shared memory are denied",
        "files, CPU time": "rlimits (FSIZE, NOFILE, CORE, CPU); fallocate denied",
        "disk": "reward code creates no file (training: the reward process may write nothing; "
        "checks: outputs opened, then the disk sealed with "
        + ("Landlock and seccomp" if landlock else "seccomp, as this kernel has no Landlock")
        + "); each program's folder is also capped by polling",
        "reads": ", ".join(map(str, interpreter_paths()))
        + " and the system libraries"
        + "".join(f"; lists only {p} (a .pth entry)" for p in listable_paths()),
        "other candidates": "hidden: only its own job directory exists for it"
        if sandbox.plan.hides_host
        else "VISIBLE: not root and no user namespaces, so nothing can hide them (names and "
        "sizes readable; writes, mode, owner and attribute changes and inotify denied)",
        "environment": "allow-list only (no API keys)",
    }
    return BackendStatus("process", sandbox.confined, sandbox.isolation(), layers)


def docker_backend_status() -> BackendStatus:
    """Usable where the engine answers and the current worker image is built; says how if not."""
    from rewardsmith.sandbox.docker_backend import docker_status, engine_version

    version, engine_problem = engine_version()
    ready, why = docker_status() if version else (False, engine_problem)
    layers = {
        "engine": f"dockerd {version} reachable" if version else engine_problem,
        "image": why if version else "not checked (no engine)",
        "isolation": "network none, read-only root, only the job dir writable, all capabilities "
        "dropped, no-new-privileges, memory/CPU/pids cgroup limits, uid nobody",
        "build the image": "rewardsmith doctor --build-image (no registry), "
        "or on a machine with one: "
        "docker build -f rewardsmith/sandbox/docker/Dockerfile -t rewardsmith-worker:latest .",
    }
    if shutil.which("dockerd") is None and shutil.which("docker") is None:
        layers["install"] = "apt-get install docker.io, then start dockerd"
    return BackendStatus("docker", ready, why, layers)


def live_check(sandbox: Sandbox) -> dict[str, Any]:
    """Start the probe worker in `sandbox`; return what it saw (uid, network, writable root...)."""
    from rewardsmith.sandbox.runner import run_job

    with tempfile.TemporaryDirectory(prefix="rewardsmith-doctor-") as tmp:
        probe = Path(tmp) / "probe"  # the probe's own fresh directory; it writes nothing we read
        limits = Limits(wall_s=60, memory_mb=1024)
        run = run_job(
            sandbox, PROBE_MODULE, [], workdir=probe, inputs={}, limits=limits, log_path=None
        ).run
    lines = run.output.strip().splitlines()
    try:  # the probe ran in the sandbox: its last line is a JSON object, or the probe failed
        seen = json.loads(lines[-1]) if lines else None
    except (ValueError, RecursionError):
        seen = None
    if (
        run.returncode != 0
        or not isinstance(seen, dict)
        or not lines[0].startswith("rewardsmith worker ok")
    ):
        return {"ok": False, "start_s": round(run.wall_s, 2), "error": run.output[-500:]}
    return {"ok": True, "start_s": round(run.wall_s, 2), **seen}
