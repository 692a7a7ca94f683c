"""The Docker sandbox: the same worker, in a container with no network and a read-only root.

Each run is one container (`docker run` costs ~0.2 s, small next to a training job) with: network
mode `none` (only `lo`), memory (no swap), CPU and process limits in the container's cgroup, the
rlimits of the process backend as `ulimits`, every capability dropped, `no-new-privileges`, a
read-only root with a small tmpfs `/tmp`, the job directory as the only writable mount, the same
environment allow-list as the process backend (none of the host's environment) and, where the
orchestrator is root, the uid `nobody`. A wall-clock timeout kills and removes the container.
Output is read from the attach stream with a cap; the log driver is `none`, so a flood fills
neither memory nor the engine's disk.

Inside, every program (worker, evaluator, smoke test, bank scoring, probe) starts through the
confine launcher, as on the process backend: the project's seccomp filter, which Docker's default
profile is not (that one allows io_uring, ptrace and network sockets), and Landlock where the
container can use it (`DockerSandbox.landlock`). The launcher fails closed: a program it cannot
confine never runs (exit 126), and the run says so.

Every container is labelled with its run id and its orchestrator (`docker/hygiene.py`), is
removed on every way out of `run` (it has a name before it exists, so even a create whose reply
was lost is found), and is in a process-wide registry: `stop_live_containers` kills them all when
the orchestrator gets a stop signal (`rewardsmith/commands/signals.py`). `sweep_stale_containers`
removes those whose orchestrator is gone; the loop and `train` call it at start.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rewardsmith.sandbox.cgroup import memory_cap_mb
from rewardsmith.sandbox.confine import EXIT_NOT_CONFINED
from rewardsmith.sandbox.docker import hygiene
from rewardsmith.sandbox.docker.image import (
    IMAGE,
    IMAGE_VERSION,
    LABEL_HOST_DIRS,
    LABEL_KIND,
    LABEL_MODE,
    LABEL_VERSION,
    SELF_CONTAINED_PYTHON,
)
from rewardsmith.sandbox.executor import (
    NOBODY,
    PROCESS_LIMIT_GRACE_S,
    TMP_BYTES,
    CappedReader,
    interpreter_paths,
    rlimits,
    worker_environment,
)
from rewardsmith.sandbox.gpu import docker_device_requests, gpu_device_files
from rewardsmith.sandbox.process_isolation import (
    DEVICES,
    DEVICES_WRITABLE,
    ETC_FILES,
    LAUNCHER,
    SYS_READABLE,
    SYSTEM_DIRS,
    listable_paths,
)
from rewardsmith.sandbox.types import Limits, SandboxRun

_ULIMITS = {
    resource.RLIMIT_NOFILE: "nofile",
    resource.RLIMIT_FSIZE: "fsize",
    resource.RLIMIT_CORE: "core",
    resource.RLIMIT_CPU: "cpu",
}
BUILD_HINT = "build it with `rewardsmith doctor --build-image` (no registry needed)"
LIVE = hygiene.LiveContainers()
"""The containers this process has created and not yet removed."""
LANDLOCK_PROBE = "from rewardsmith.sandbox.landlock import landlock_abi; print(landlock_abi())"
_LANDLOCK: dict[str, int] = {}  # image id -> the Landlock ABI its containers can use
_LANDLOCK_LOCK = threading.Lock()
NOT_CONFINED = "rewardsmith confine: not confined"  # how the launcher's refusal begins


def _client(timeout: int = 60) -> Any:
    import docker

    return docker.from_env(timeout=timeout)


def engine_version() -> tuple[str | None, str]:
    """The Docker engine's version, or None and the reason it cannot be reached."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return None, "the `docker` Python package is not installed"
    try:
        return str(_client(timeout=5).version().get("Version", "?")), ""
    except Exception as exc:
        reason = str(exc).splitlines()[0][:120]
        return None, f"no Docker engine reachable ({reason}); install docker.io and start dockerd"


def docker_status(image: str = IMAGE) -> tuple[bool, str]:
    """Whether the Docker backend can run now, and why not (engine missing, image not built)."""
    version, why = engine_version()
    if version is None:
        return False, why
    import docker

    try:
        labels = _client(timeout=5).images.get(image).labels or {}
    except docker.errors.ImageNotFound:
        return (
            False,
            f"engine {version} is up but the worker image {image} is missing; {BUILD_HINT}",
        )
    except Exception as exc:
        return False, f"could not inspect the worker image {image}: {exc}"
    if labels.get(LABEL_KIND) != "1":
        return (
            False,
            f"{image} is not a RewardSmith worker image (no {LABEL_KIND} label); {BUILD_HINT}",
        )
    if labels.get(LABEL_VERSION) != IMAGE_VERSION:
        return (
            False,
            f"the worker image {image} is out of date "
            f"(version {labels.get(LABEL_VERSION)}); {BUILD_HINT}",
        )
    return True, f"engine {version}, image {image} ({labels.get(LABEL_MODE, 'self-contained')})"


def _cgroup_events(container_id: str) -> list[Path]:
    """Where the container's `pids.events` may live on the host (cgroupfs or systemd, v1 or v2)."""
    root = Path("/sys/fs/cgroup")
    return [
        root / "pids" / "docker" / container_id / "pids.events",
        root / "pids" / "system.slice" / f"docker-{container_id}.scope" / "pids.events",
        root / "docker" / container_id / "pids.events",
        root / "system.slice" / f"docker-{container_id}.scope" / "pids.events",
    ]


def _process_limit_hit(paths: list[Path]) -> bool:
    for path in paths:
        with contextlib.suppress(OSError, ValueError):
            for line in path.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max" and int(value) > 0:
                    return True
    return False


def _attach(client: Any, container_id: str) -> Iterator[bytes]:
    """stdout and stderr as they come; the request is made here, before the container starts."""
    stream: Iterator[bytes] = client.api.attach(
        container_id, stdout=True, stderr=True, stream=True, logs=False
    )
    return stream


def launcher_command(
    python: str, program: list[str], writable: list[Path], readable: list[Path], host: bool
) -> list[str]:
    """`program` behind the confine launcher, in the process backend's argument shape.

    Readable: the system directories, the few /etc files, the devices, the CPU topology, /proc
    (the container's own PID namespace), the readable dirs and, where the host's are mounted
    (`host`), the interpreter and package (and, listable only, a `.pth` entry holding it).
    Writable: the writable dirs, /tmp, /dev/null and the GPU's device files. No --uid (the
    container already runs as nobody without capabilities), no --hide (its root holds nothing of
    the host), no --no-shared-memory (the container's memory cgroup counts shared memory) and no
    --require-landlock (not every engine lets a container use Landlock): the launcher applies
    Landlock where it can, seccomp always, or exits without running `program`.
    """
    system = map(Path, (*SYSTEM_DIRS, *ETC_FILES, *DEVICES, *SYS_READABLE, "/proc"))
    grants = {
        "--read": [*(interpreter_paths() if host else []), *readable, *system],
        "--list": listable_paths() if host else [],
        "--write": [*writable, Path("/tmp"), *map(Path, DEVICES_WRITABLE), *gpu_device_files()],
    }
    command = [python, "-m", LAUNCHER]
    for flag, paths in grants.items():
        for path in paths:
            command += [flag, str(path)]
    return [*command, "--", *program]


def _refusal(run: SandboxRun) -> str | None:
    """The launcher's reason where it refused to start the program (it could not confine it)."""
    if run.returncode != EXIT_NOT_CONFINED:
        return None
    for line in run.output.splitlines():
        if line.startswith(NOT_CONFINED):
            return line
    return None


def _python(labels: dict[str, str]) -> str:
    """The interpreter inside the container, by absolute path (the launcher execs, not a shell)."""
    return sys.executable if labels.get(LABEL_MODE) == "host-mounts" else SELF_CONTAINED_PYTHON


class DockerSandbox:
    """Runs worker modules in containers of the worker image; same interface as ProcessSandbox."""

    name = "docker"

    def __init__(self, image: str = IMAGE, run_id: str | None = None) -> None:
        self.image = image
        self.run_id = run_id  # labels its containers, so a sweep can tell whose they are

    def landlock(self, client: Any = None, image: Any = None) -> int:
        """The Landlock ABI the launcher applies in this image's containers; 0 for none.

        The engine decides, not only the kernel: an engine whose seccomp profile lacks the
        Landlock calls refuses them. Probed once per image, in a container like the runs'.
        """
        client = client or _client()
        image = image or client.images.get(self.image)
        with _LANDLOCK_LOCK:
            if image.id not in _LANDLOCK:
                found = self._probe_landlock(client, image.labels or {})
                if found is None:
                    return 0  # the probe failed: claim nothing, and ask again next time
                _LANDLOCK[image.id] = found
            return _LANDLOCK[image.id]

    def _probe_landlock(self, client: Any, labels: dict[str, str]) -> int | None:
        """Start `landlock_abi()` in a container of the image; None where that failed."""
        import tempfile

        python = _python(labels)
        limits = Limits(wall_s=60, memory_mb=512)
        with tempfile.TemporaryDirectory(prefix="rewardsmith-landlock-") as tmp:
            home = Path(tmp)
            run = self._container(client, labels, [python, "-c", LANDLOCK_PROBE], [home], limits)
        lines = run.output.split()
        if run.returncode != 0 or not lines or not lines[-1].isdigit():
            return None
        return int(lines[-1])

    def mechanisms(self, landlock: int | None = None) -> list[str]:
        """What confines a program here, e.g. ["docker", "landlock v7", "seccomp", ...]."""
        abi = self.landlock() if landlock is None else landlock
        found = ["docker", *([f"landlock v{abi}"] if abi else []), "seccomp"]
        return [*found, *self._outer()]

    @staticmethod
    def _outer() -> list[str]:
        """What the container gives whatever the launcher does: the uid, the network."""
        uid = "uid nobody" if os.geteuid() == 0 else "this user without capabilities"
        return [uid, "network namespace"]

    def _mounts(
        self, labels: dict[str, str], writable: list[Path], readable: list[Path]
    ) -> list[Any]:
        from docker.types import Mount

        host: list[Path] = []
        if labels.get(LABEL_MODE) == "host-mounts":
            host = [Path("/") / d for d in labels.get(LABEL_HOST_DIRS, "usr").split(",") if d]
            host += [p for p in interpreter_paths() if not any(p.is_relative_to(h) for h in host)]
            if Path("/etc/ld.so.cache").exists():
                host.append(Path("/etc/ld.so.cache"))
        mounts = [Mount(str(p), str(p), type="bind", read_only=True) for p in [*host, *readable]]
        mounts += [Mount(str(p), str(p), type="bind", read_only=False) for p in writable]
        return mounts

    def _host_config(self, client: Any, limits: Limits, mounts: list[Any]) -> Any:
        from docker.types import LogConfig, Ulimit

        values = rlimits(limits, limits.processes)
        ulimits = [
            Ulimit(name=name, soft=values[kind], hard=values[kind] + (5 if name == "cpu" else 0))
            for kind, name in _ULIMITS.items()
            if kind in values
        ]
        # RLIMIT_AS is not a Docker ulimit; RLIMIT_DATA covers heap and anonymous maps, so a huge
        # allocation still fails at once with MemoryError. The cgroup limit sits above it, as the
        # backstop for all processes together: at the same value, page-cache thrashing near the
        # limit would stall the worker instead of failing it.
        ulimits.append(
            Ulimit(name="data", soft=limits.memory_mb << 20, hard=limits.memory_mb << 20)
        )
        cgroup_mb = memory_cap_mb(limits.memory_mb)
        return client.api.create_host_config(
            mounts=mounts,
            network_mode="none",
            mem_limit=f"{cgroup_mb}m",
            memswap_limit=f"{cgroup_mb}m",
            nano_cpus=int(limits.cpus * 1e9) if limits.cpus else None,
            pids_limit=limits.processes,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            read_only=True,
            tmpfs={"/tmp": f"rw,nosuid,nodev,noexec,size={TMP_BYTES}"},
            ulimits=ulimits,
            log_config=LogConfig(type="none"),
            ipc_mode="private",
            init=True,  # docker-init as PID 1: the worker gets SIGXCPU (PID 1 would ignore it)
            device_requests=docker_device_requests(),  # the host's GPUs, for JAX workers
        )

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun:
        """`Sandbox.run` in a fresh container, through the confine launcher, removed afterwards
        whatever happens.

        Raises KeyboardInterrupt where `stop_live_containers` killed it: the orchestrator is
        stopping, and the run is no result of the reward's.
        """
        client = _client()
        image = client.images.get(self.image)
        abi = self.landlock(client, image)  # a container of its own, once per image
        labels = image.labels or {}
        python, readable = _python(labels), readable or []
        host = labels.get(LABEL_MODE) == "host-mounts"
        program = [python, "-m", module, *args]
        command = launcher_command(python, program, writable, readable, host)
        run = self._container(client, labels, command, writable, limits, on_poll, readable)
        refused = _refusal(run)
        if refused is None:
            run.mechanisms = self.mechanisms(abi)
        else:  # the program never started
            run.mechanisms = ["docker", *self._outer()]
            run.warnings.append(f"{refused} (the program did not run)")
        return run

    def _container(
        self,
        client: Any,
        labels: dict[str, str],
        command: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun:
        """Run `command` in a fresh container (labelled, limited, removed whatever happens)."""
        if os.geteuid() == 0:
            user = f"{NOBODY}:{NOBODY}"
            for path in writable:
                os.chown(path, NOBODY, NOBODY)
        else:
            user = f"{os.getuid()}:{os.getgid()}"
        host_config = self._host_config(
            client, limits, self._mounts(labels, writable, readable or [])
        )
        start = time.monotonic()
        name = f"rewardsmith-worker-{uuid.uuid4().hex[:16]}"
        LIVE.add(name)
        try:
            cid = client.api.create_container(
                self.image,
                command=command,
                user=user,
                environment=worker_environment(writable[0]),
                working_dir=str(writable[0]),
                host_config=host_config,
                labels=hygiene.owner_labels(self.run_id, limits.wall_s),
                network_disabled=True,
                name=name,
            )["Id"]
            reader = CappedReader(_attach(client, cid), limits.output_bytes)
            reader.start()
            client.api.start(cid)
            result = self._supervise(client, cid, reader, limits, on_poll, start)
        finally:
            # By name: a create whose reply never came (a timeout, a signal) made it all the same.
            with contextlib.suppress(Exception):
                client.api.remove_container(name, force=True)
            stopped = LIVE.discard(name)
        if stopped:  # killed by `stop_live_containers`: the orchestrator is stopping
            raise KeyboardInterrupt
        return result

    def _supervise(
        self,
        client: Any,
        cid: str,
        reader: CappedReader,
        limits: Limits,
        on_poll: Callable[[], None] | None,
        start: float,
    ) -> SandboxRun:
        """Wait with the wall-clock limit, kill on timeout or a swallowed fork bomb, collect."""
        done = threading.Event()
        status: dict[str, Any] = {}

        def wait() -> None:
            with contextlib.suppress(Exception):
                status.update(_client(timeout=24 * 3600).api.wait(cid))
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        events = _cgroup_events(cid)
        timed_out, limit_hit, refused_at = False, None, None
        while not done.wait(0.05):
            if on_poll is not None:
                on_poll()
            now = time.monotonic()
            if now - start > limits.wall_s:
                timed_out = True
                break
            if _process_limit_hit(events):
                refused_at = refused_at or now
                if now - refused_at > PROCESS_LIMIT_GRACE_S:
                    break
        # Seen while polling counts too: the cgroup (and its events file) is gone once the
        # container exits, e.g. when the memory limit killed a fork bomb right after.
        if refused_at is not None or _process_limit_hit(events):
            limit_hit = "processes"
        if not done.is_set():
            with contextlib.suppress(Exception):
                client.api.kill(cid)
            done.wait(10)
        state = client.api.inspect_container(cid)["State"]
        if state.get("OOMKilled"):
            limit_hit = limit_hit or "memory"
        reader.join(timeout=5)
        output = reader.output
        returncode = status.get("StatusCode", state.get("ExitCode"))
        return SandboxRun(
            returncode=returncode,
            timed_out=timed_out,
            wall_s=time.monotonic() - start,
            output=output.text(),
            output_bytes=output.total,
            backend=self.name,
            warnings=output.warnings(),
            limit_hit=limit_hit,
        )


def stop_live_containers(remove: bool = False) -> int:
    """Kill (or force-remove) every container this process has running; how many there were.

    Called on a stop signal, before the orchestrator unwinds: the containers die at once instead
    of training until their own limit. Imports and connects only when there is one.
    """
    if not len(LIVE):
        return 0
    try:
        client = _client(timeout=10)
    except Exception:
        return len(LIVE)  # no engine: the next start's sweep removes them
    return len(LIVE.stop_all(client, remove=remove))


def stale_containers() -> list[hygiene.StaleContainer] | None:
    """Worker containers no live orchestrator will remove; None where no engine is reachable."""
    try:
        return hygiene.find_stale(_client(timeout=10))
    except Exception:
        return None


def sweep_stale_containers() -> list[hygiene.StaleContainer]:
    """Remove the stale worker containers (orphans of orchestrators that died); the removed."""
    try:
        client = _client(timeout=30)
        return hygiene.remove(client, hygiene.find_stale(client))
    except Exception:
        return []


def sweep_message() -> str | None:
    """Sweep, and say what was removed (None when nothing was): for a run's start or resume."""
    removed = sweep_stale_containers()
    if not removed:
        return None
    return f"removed {len(removed)} stale worker container(s): {hygiene.describe(removed)}"


def check_worker(image: str = IMAGE) -> tuple[bool, str]:
    """Start one container of the worker image and import the package in it (for `doctor`)."""
    import tempfile

    ready, why = docker_status(image)
    if not ready:
        return False, why
    with tempfile.TemporaryDirectory(prefix="rewardsmith-doctor-") as tmp:
        job = Path(tmp)
        run = DockerSandbox(image, run_id="doctor").run(
            "rewardsmith.programs.docker_probe", [], [job], Limits(wall_s=60, memory_mb=1024)
        )
    if run.returncode == 0 and "rewardsmith worker ok" in run.output:
        return (
            True,
            f"worker image {image} runs the package ({run.wall_s:.1f} s to start and import)",
        )
    return (
        False,
        f"worker image {image} did not start the package (exit {run.returncode}): "
        f"{run.output[-500:]}",
    )
