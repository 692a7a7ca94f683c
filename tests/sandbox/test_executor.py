"""The sandbox backends' own guarantees, checked fast: what a worker sees, and how failures read.

The live checks start the probe worker (`rewardsmith.programs.docker_probe`, also what `rewardsmith
doctor` runs) in each backend and assert what it reports: its uid, capabilities, network
interfaces, environment and which directories it can write.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import signal
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith.jobs.training import classify_failure
from rewardsmith.reward.call import exception_category
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.sandbox.backends import choose_sandbox, live_check
from rewardsmith.sandbox.cgroup import RunCgroup
from rewardsmith.sandbox.docker.image import rootfs_tar
from rewardsmith.sandbox.docker_backend import docker_status
from rewardsmith.sandbox.executor import CappedOutput, ProcessSandbox, worker_environment
from rewardsmith.sandbox.types import Limits, Sandbox, SandboxRun

E = ErrorCategory
CANARY = "sk-canary-0123456789abcdef"
NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def test_worker_sees_no_network_no_capabilities_and_a_read_only_root(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    facts = live_check(sandbox)
    assert facts["ok"], facts
    assert facts["interfaces"] == ["lo"]
    assert set(facts["capabilities"]) == {"0"}
    assert not facts["root_writable"] and not facts["package_writable"] and facts["cwd_writable"]
    assert "OPENAI_API_KEY" not in facts["environment"]
    assert facts["visible_processes"] <= 3  # its own PID namespace: no orchestrator to read
    if os.geteuid() == 0:
        assert facts["uid"] == 65534


def test_without_bubblewrap_landlock_keeps_the_root_read_only_and_cuts_the_network(
    tmp_path: Path,
) -> None:
    sandbox = ProcessSandbox(use_bwrap=False)
    if not sandbox.landlock:
        pytest.skip("this kernel has no Landlock")
    run = sandbox.run(
        "rewardsmith.programs.docker_probe", [], [tmp_path], Limits(wall_s=60, memory_mb=1024)
    )
    assert run.returncode == 0, run.output
    if sandbox.unshare:  # without namespaces it warns that seccomp alone keeps the network out
        assert run.warnings == []
    assert "landlock" in sandbox.isolation() and "seccomp" in sandbox.isolation()
    assert run.mechanisms[:2] == [f"landlock v{sandbox.landlock}", "seccomp"]
    facts = json.loads(run.output.strip().splitlines()[-1])
    assert not facts["root_writable"] and not facts["package_writable"] and facts["cwd_writable"]
    assert set(facts["capabilities"]) == {"0"}
    if sandbox.unshare:
        assert facts["interfaces"] == ["lo"] and facts["visible_processes"] <= 3
    if os.geteuid() == 0:
        assert facts["uid"] == 65534


def test_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY)
    monkeypatch.setenv("LANG", "C.UTF-8")
    env = worker_environment(tmp_path)
    assert CANARY not in env.values() and env["LANG"] == "C.UTF-8"
    assert env["HOME"] == str(tmp_path) and env["PYTHONSAFEPATH"] == "1"


def test_bubblewrap_command_binds_only_the_job_dir_writable(tmp_path: Path) -> None:
    sandbox = ProcessSandbox()
    if sandbox.bwrap is None:
        pytest.skip("bubblewrap is not installed")
    job, other = tmp_path / "job", tmp_path / "other"
    cmd, warnings = sandbox.command("m", [], [job], [other])
    assert warnings == []
    pairs = list(itertools.pairwise(cmd))
    assert ("--bind", str(job)) in pairs and ("--ro-bind", str(other)) in pairs
    assert [p for p in pairs if p[0] == "--bind"] == [("--bind", str(job))]
    assert ("--ro-bind", "/proc/sys") in pairs and ("--remount-ro", "/") in pairs
    assert ("--ro-bind", "/") not in pairs  # a minimal root, not the host's
    bound = {b for flag, b in pairs if flag in ("--bind", "--ro-bind", "--ro-bind-try")}
    assert "/usr" in bound and "/etc/ld.so.cache" in bound
    assert not {"/var", "/var/tmp", "/home", "/root", "/run", "/srv", "/etc"} & bound
    assert "rewardsmith.sandbox.confine" in cmd  # Landlock and seccomp inside, too
    for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"):
        assert flag in cmd
    if os.geteuid() == 0:
        assert ("--cap-drop", "ALL") in pairs


def test_capped_output_keeps_head_and_tail_and_counts_everything() -> None:
    capped = CappedOutput(cap=100)
    for _ in range(1000):
        capped.feed(b"x" * 1000)
    capped.feed(b"THE END")
    text = capped.text()
    assert capped.total == 1_000_007 and len(capped.head) + len(capped.tail) == 100
    assert "output truncated: 1000007 bytes" in text and text.endswith("THE END")
    assert capped.warnings() and "1000007 bytes" in capped.warnings()[0]


def test_cgroup_caps_processes_and_cleans_up() -> None:
    cgroup = RunCgroup.create(processes=8, cpus=0.5)
    if cgroup is None:
        pytest.skip("no writable pids cgroup here (not root, or no cgroup v1 pids hierarchy)")
    try:
        assert (cgroup.dirs["pids"] / "pids.max").read_text().strip() == "8"
        assert not cgroup.process_limit_hit()
    finally:
        cgroup.remove()
    assert all(not path.exists() for path in cgroup.dirs.values())


def run(
    returncode: int | None, output: str = "", timed_out: bool = False, limit_hit: str | None = None
) -> SandboxRun:
    return SandboxRun(
        returncode, timed_out, 1.0, output, len(output), "process", limit_hit=limit_hit
    )


@pytest.mark.parametrize(
    ("sandbox_run", "category", "says"),
    [
        (run(None, timed_out=True), E.TIMEOUT, "wall-clock"),
        (run(128 + signal.SIGXCPU), E.TIMEOUT, "CPU-time"),
        (run(137, limit_hit="memory"), E.MEMORY_LIMIT, "MB"),
        (run(1, "MemoryError"), E.MEMORY_LIMIT, "MB"),
        (run(0, timed_out=True, limit_hit="processes"), E.PROCESS_LIMIT, "processes"),
        (run(-signal.SIGSEGV), E.CRASHED, "SIGSEGV"),
        (run(139), E.CRASHED, "SIGSEGV"),
        (run(0), E.SANDBOX_DIED, "exit status 0"),
        (run(3), E.CRASHED, "status 3"),
    ],
)
def test_classify_failure(sandbox_run: SandboxRun, category: ErrorCategory, says: str) -> None:
    error = classify_failure(sandbox_run, Limits(cpu_s=5))
    assert error.category == category and says in error.message


@pytest.mark.parametrize(
    ("exc", "category"),
    [
        (MemoryError(), E.MEMORY_LIMIT),
        (BlockingIOError(11, "Resource temporarily unavailable"), E.PROCESS_LIMIT),
        (RuntimeError("can't start new thread"), E.PROCESS_LIMIT),
        (ConnectionRefusedError(111, "Connection refused"), E.NETWORK_BLOCKED),
        (OSError(101, "Network is unreachable"), E.NETWORK_BLOCKED),
        (ValueError("plain"), E.RUNTIME_ERROR),
        (PermissionError(13, "Permission denied"), E.RUNTIME_ERROR),
    ],
)
def test_exceptions_in_reward_code_map_to_categories(
    exc: BaseException, category: ErrorCategory
) -> None:
    assert exception_category(exc) == category


def test_choose_sandbox_without_an_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", NO_ENGINE["DOCKER_HOST"])
    ready, why = docker_status()
    assert not ready and "dockerd" in why
    chosen = choose_sandbox("auto")
    assert chosen.sandbox.name == "process" and "Docker not usable" in chosen.reason
    with pytest.raises(ValueError, match="not usable"):
        choose_sandbox("docker")
    with pytest.raises(ValueError, match="unknown sandbox"):
        choose_sandbox("vm")
    assert choose_sandbox("process").sandbox.name == "process"


@pytest.mark.docker
def test_auto_prefers_docker_when_ready() -> None:
    ready, why = docker_status()
    if not ready:
        pytest.skip(f"Docker backend not usable: {why}")
    assert choose_sandbox("auto").sandbox.name == "docker"


def test_worker_image_rootfs_is_tiny_and_has_no_host_secrets() -> None:
    data, dirs = rootfs_tar()
    assert len(data) < 64 * 1024 and "usr" in dirs
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        names = set(tar.getnames())
        passwd = tar.extractfile("etc/passwd")
        assert passwd is not None and b"nobody:x:65534" in passwd.read()
    assert {"etc/passwd", "tmp", "usr"} <= names
    assert not any(name.startswith(("root/", "home/")) for name in names)


def doctor(args: list[str], env: dict[str, str] | None = None) -> Any:
    from rewardsmith.cli import app

    result = CliRunner().invoke(app, ["doctor", *args], env={"COLUMNS": "200", **(env or {})})
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
def test_doctor_lists_both_backends_and_says_why_docker_is_not_usable() -> None:
    report = json.loads(doctor(["--json", "--no-live"], NO_ENGINE).output)
    backends = {b["name"]: b for b in report["backends"]}
    assert backends["process"]["usable"] and not backends["docker"]["usable"]
    assert "dockerd" in backends["docker"]["summary"] and report["auto"] == "process"
    assert "--build-image" in backends["docker"]["layers"]["build the image"]


@pytest.mark.slow
def test_doctor_table_runs_the_live_check() -> None:
    output = doctor(["--live"], NO_ENGINE).output
    assert "process: usable" in output and "docker: NOT usable" in output and "live check" in output
