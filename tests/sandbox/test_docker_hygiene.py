"""Docker hygiene: containers say whose they are, go when done, die with their orchestrator.

Before, after SIGTERM to `rewardsmith train` or `run` the containers kept training until their own
wall-clock limit, and nothing ever removed containers of an orchestrator that was killed. Now each
container is labelled with its run id and its orchestrator (pid, start time, host), removed on
every path out of the backend, killed when the orchestrator gets SIGINT, SIGTERM or SIGHUP, and
swept at the next start once its orchestrator is gone; `rewardsmith doctor` lists the stale ones.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith.sandbox.docker_backend import docker_status

pytestmark = pytest.mark.docker
WORKER = "rewardsmith.sandbox=worker"
runner = CliRunner()


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    ready, why = docker_status()
    if not ready:
        pytest.skip(f"Docker backend not usable: {why}")
    import docker

    engine = docker.from_env(timeout=60)
    yield engine
    engine.close()


def _wait_for(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _containers(client: Any, label: str, running_only: bool = False) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.api.containers(
        all=not running_only, filters={"label": label}
    )
    return found


def _mounting(client: Any, path: Path, running_only: bool = True) -> list[dict[str, Any]]:
    """Worker containers with a mount under `path` (found the same way on the old code)."""
    return [
        c
        for c in _containers(client, WORKER, running_only)
        if any(str(m.get("Source", "")).startswith(str(path)) for m in c.get("Mounts", []))
    ]


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _plant(client: Any, labels: dict[str, str], command: list[str]) -> str:
    """A container as the backend labels its own, running `command` from the host's /usr."""
    from docker.types import Mount

    from rewardsmith.sandbox.docker.image import IMAGE

    mounts = [Mount(d, d, type="bind", read_only=True) for d in ("/usr", "/lib", "/lib64")]
    mounts = [
        m for m in mounts if Path(m["Source"]).is_dir() and not Path(m["Source"]).is_symlink()
    ]
    container = client.api.create_container(
        IMAGE,
        command=command,
        labels={"rewardsmith.sandbox": "worker", **labels},
        host_config=client.api.create_host_config(mounts=mounts, network_mode="none"),
    )
    client.api.start(container["Id"])
    return str(container["Id"])


def _remove(client: Any, ids: list[str]) -> None:
    for cid in ids:
        with contextlib.suppress(Exception):
            client.api.remove_container(cid, force=True)


@pytest.fixture
def tidy(client: Any, tmp_path: Path) -> Iterator[None]:
    """Whatever the test leaves (on the old code: everything) is removed afterwards."""
    yield
    _remove(client, [c["Id"] for c in _mounting(client, tmp_path, running_only=False)])


@pytest.mark.usefixtures("tidy")
def test_every_path_out_of_the_backend_removes_the_container(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception from on_poll, a create that fails after the engine made the container, an
    attach that fails: none leaves a container behind."""
    from rewardsmith.sandbox import docker_backend
    from rewardsmith.sandbox.docker_backend import DockerSandbox
    from rewardsmith.sandbox.types import Limits

    sandbox = DockerSandbox()  # its containers are found by their mount of tmp_path
    module = "rewardsmith.programs.docker_probe"

    def interrupt() -> None:
        assert _mounting(client, tmp_path), "the container should be running"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sandbox.run(module, [], [tmp_path], Limits(wall_s=60), on_poll=interrupt)
    assert _mounting(client, tmp_path, running_only=False) == []

    real = docker_backend._client

    class Flaky:
        """The engine creates the container, but the reply is lost (a timeout, a signal)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._real = real(*args, **kwargs)
            self.images = self._real.images
            self.api = self

        def __getattr__(self, name: str) -> Any:
            return getattr(self._real.api, name)

        def create_container(self, *args: Any, **kwargs: Any) -> Any:
            self._real.api.create_container(*args, **kwargs)
            raise TimeoutError("the engine did not answer in time")

    monkeypatch.setattr(docker_backend, "_client", Flaky)
    with pytest.raises(TimeoutError):
        sandbox.run(module, [], [tmp_path], Limits(wall_s=60))
    assert _mounting(client, tmp_path, running_only=False) == []

    monkeypatch.setattr(docker_backend, "_client", real)

    def broken_attach(*args: Any) -> Iterator[bytes]:
        raise ConnectionError("attach failed")

    monkeypatch.setattr(docker_backend, "_attach", broken_attach)
    with pytest.raises(ConnectionError):
        sandbox.run(module, [], [tmp_path], Limits(wall_s=60))
    assert _mounting(client, tmp_path, running_only=False) == []


@pytest.mark.slow
def test_a_run_labels_its_containers_and_leaves_none(client: Any, tmp_path: Path) -> None:
    from rewardsmith.eureka_loop.evaluation import EvalKey
    from rewardsmith.eureka_loop.reporter import NullReporter
    from rewardsmith.eureka_loop.runner import start_run
    from rewardsmith.eureka_loop.state import CandidateKey, LoopConfig

    seen: dict[str, dict[str, str]] = {}

    class Watcher(NullReporter):
        """Looks at the run's containers while a candidate trains."""

        run_id = ""

        def message(self, text: str) -> None:
            if text.startswith("run "):
                self.run_id = text.split()[1]

        def progress(self, key: CandidateKey | EvalKey, done: int, total: int) -> None:
            for c in _containers(client, f"rewardsmith.run={self.run_id}", running_only=True):
                seen[c["Id"]] = c["Labels"]

    config = LoopConfig(
        task_id="cartpole", rounds=1, samples=1, steps=6_000, parallel=1, evaluate=False,
        sandbox="docker", preference_check=False,
    )  # fmt: skip
    reporter = Watcher()
    start_run(config, tmp_path, reporter, command=["rewardsmith", "run"])
    assert reporter.run_id and seen, "no container of the run was seen while it trained"
    for labels in seen.values():
        assert labels["rewardsmith.sandbox"] == "worker"
        assert labels["rewardsmith.run"] == reporter.run_id
        assert labels["rewardsmith.pid"] == str(os.getpid())
        assert labels["rewardsmith.host"] == socket.gethostname()
        assert float(labels["rewardsmith.started"]) <= time.time()
        assert float(labels["rewardsmith.wall-s"]) > 0
    assert _containers(client, f"rewardsmith.run={reporter.run_id}") == []


def _signal_mid_training(
    client: Any, tmp_path: Path, command: list[str], sig: signal.Signals
) -> tuple[int, str]:
    """Start `command`, wait until a container of it trains, signal it; the exit code, output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSMITH_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewardsmith.cli", *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # The command leaves an ignored SIGHUP ignored (nohup's promise), so a suite started
        # under nohup must hand it the default disposition to test the stop.
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    try:
        _wait_for(lambda: _mounting(client, tmp_path), 180, "a container of the job")
        _wait_for(lambda: list(tmp_path.rglob("progress.json")), 120, "training to start")
        time.sleep(1)
        proc.send_signal(sig)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, output


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_train_kills_its_container(
    client: Any, tmp_path: Path, sig: signal.Signals
) -> None:
    out = tmp_path / "job"
    command = ["train", "cartpole", "--sandbox", "docker", "--steps", "200000", "--out", str(out)]
    try:
        code, output = _signal_mid_training(client, tmp_path, command, sig)
        _wait_for(lambda: not _mounting(client, tmp_path), 5, "the container to stop")
        assert _mounting(client, tmp_path, running_only=False) == [], "a container was left"
    finally:
        _remove(client, [c["Id"] for c in _mounting(client, tmp_path, running_only=False)])
    assert code == 128 + sig, output
    assert "interrupted" in output and "Traceback" not in output, output


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["docker", "process"])
def test_sigterm_to_run_stops_cleanly_and_leaves_nothing_running(
    client: Any, tmp_path: Path, backend: str
) -> None:
    command = [
        "run", "cartpole", "--rounds", "1", "--samples", "1", "--steps", "200000",
        "--parallel", "1", "--no-evaluate", "--no-preference-check", "--sandbox", backend,
        "--runs-dir", str(tmp_path),
    ]  # fmt: skip
    try:
        if backend == "docker":
            code, output = _signal_mid_training(client, tmp_path, command, signal.SIGTERM)
            _wait_for(lambda: not _mounting(client, tmp_path), 5, "the container to stop")
        else:
            code, output = _signal_mid_process(tmp_path, command)
            _wait_for(lambda: not _processes_under(tmp_path), 5, "the worker to stop")
    finally:
        _remove(client, [c["Id"] for c in _mounting(client, tmp_path, running_only=False)])
    assert code == 128 + signal.SIGTERM, output
    assert "rewardsmith resume" in output and "Traceback" not in output, output
    (run_json,) = tmp_path.glob("*/run.json")
    assert '"status": "interrupted"' in run_json.read_text()
    assert not list(tmp_path.rglob("outcome.json")), "a stopped job must not count as a failure"


def _processes_under(path: Path) -> list[int]:
    """Processes (other than this one) whose command line names `path`: the job's workers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(path) in cmdline and "rewardsmith.cli" not in cmdline:
            found.append(int(entry.name))
    return found


def _signal_mid_process(tmp_path: Path, command: list[str]) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSMITH_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewardsmith.cli", *command],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        _wait_for(lambda: list(tmp_path.rglob("progress.json")), 180, "training to start")
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, output


@pytest.mark.slow
def test_orphans_are_listed_by_doctor_and_swept_at_the_next_start(
    client: Any, tmp_path: Path
) -> None:
    from rewardsmith.cli import app

    tag = uuid.uuid4().hex[:8]
    now = str(time.time())
    mine = {"rewardsmith.host": socket.gethostname(), "rewardsmith.started": now}
    mine["rewardsmith.wall-s"] = "3600"
    orphan = _plant(
        client,
        {**mine, "rewardsmith.run": f"orphan-{tag}", "rewardsmith.pid": str(_dead_pid())},
        ["sleep", "600"],
    )
    exited = _plant(
        client,
        {**mine, "rewardsmith.run": f"exited-{tag}", "rewardsmith.pid": str(_dead_pid())},
        ["true"],
    )
    live = _plant(
        client,
        {**mine, "rewardsmith.run": f"live-{tag}", "rewardsmith.pid": str(os.getpid())},
        ["sleep", "600"],
    )
    try:
        _wait_for(
            lambda: client.api.inspect_container(exited)["State"]["Status"] == "exited",
            30,
            "the planted container to exit",
        )
        result = runner.invoke(app, ["doctor", "--no-live"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert orphan[:12] in result.output and exited[:12] in result.output, result.output
        assert f"orphan-{tag}" in result.output and live[:12] not in result.output
        assert "rewardsmith doctor --sweep" in result.output
        # The next start sweeps them; the container of a live orchestrator stays.
        result = runner.invoke(
            app,
            ["train", "cartpole", "--sandbox", "docker", "--steps", "64", "--out", str(tmp_path)],
            env={"COLUMNS": "200"},
        )
        assert result.exit_code == 0, result.output
        remaining = {c["Id"] for c in _containers(client, WORKER)}
        assert orphan not in remaining and exited not in remaining
        assert live in remaining
    finally:
        _remove(client, [orphan, exited, live])


def test_doctor_sweep_removes_orphans(client: Any) -> None:
    from rewardsmith.cli import app

    tag = uuid.uuid4().hex[:8]
    orphan = _plant(
        client,
        {
            "rewardsmith.run": f"orphan-{tag}",
            "rewardsmith.pid": str(_dead_pid()),
            "rewardsmith.host": socket.gethostname(),
        },
        ["sleep", "600"],
    )
    try:
        result = runner.invoke(app, ["doctor", "--no-live", "--sweep"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert orphan not in {c["Id"] for c in _containers(client, WORKER)}
        assert "removed" in result.output and orphan[:12] in result.output
    finally:
        _remove(client, [orphan])
