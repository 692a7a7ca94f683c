"""Under Docker, every program (the checks included) starts through the confine launcher.

Before, only the reward process confined itself inside the container: the smoke test and the bank
scoring ran the candidate's reward under Docker's default seccomp profile alone, which lets it set
up io_uring (whose requests bypass any filter), trace itself, and open AF_UNIX datagram and
AF_INET sockets. Now the Docker backend starts each program as the process backend does, through
`python -m rewardsmith.sandbox.confine` (the project's seccomp filter, and Landlock where the
kernel has it inside the container), and fails closed: a program it cannot confine never runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.score import score_bank
from rewardsmith.jobs.smoke import smoke_test
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.syscall import COMMON_SYSCALLS
from rewardsmith.sandbox.types import Limits

pytestmark = [pytest.mark.docker, pytest.mark.slow]
LIMITS = Limits(wall_s=60, memory_mb=2048, processes=64, output_bytes=64_000)
# How hostile code reaches modules the static check forbids (as in test_bad_rewards.py).
ESCAPE = (
    'import typing\nimport numpy as np\nimp = vars(getattr(typing, "s" + "ys"))["mod" + "ules"]'
    "['importlib'].import_module\n"
)
# The reward tries each, then raises with what it saw (the check reports the message back).
ATTEMPTS = f"""\
def compute_reward(state, action, next_state):
    ctypes, errno, socket = imp('ctypes'), imp('errno'), imp('socket')
    libc = ctypes.CDLL(None, use_errno=True)
    seen = {{}}

    def outcome(result):
        return 'DONE' if result >= 0 else errno.errorcode.get(ctypes.get_errno(), 'errno?')

    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    seen['io_uring_setup'] = outcome(libc.syscall({COMMON_SYSCALLS["io_uring_setup"]}, 1, params))
    for name, family, kind in (
        ('unix dgram', socket.AF_UNIX, socket.SOCK_DGRAM),
        ('inet', socket.AF_INET, socket.SOCK_STREAM),
    ):
        try:
            socket.socket(family, kind).close()
            seen[name] = 'DONE'
        except OSError as exc:
            seen[name] = errno.errorcode.get(exc.errno, 'errno?')
    seen['ptrace traceme'] = outcome(libc.ptrace(0, 0, 0, 0))  # last: it makes us a tracee
    raise RuntimeError('SEEN ' + imp('json').dumps(seen))
"""
REFUSED = {
    "io_uring_setup": "EPERM",
    "unix dgram": "EPERM",
    "inet": "ENETUNREACH",
    "ptrace traceme": "EPERM",
}
# A seccomp profile under which the launcher cannot install its filter (test only).
NO_SECCOMP_PROFILE = json.dumps(
    {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["seccomp"], "action": "SCMP_ACT_ERRNO"}],
    }
)


@pytest.fixture(scope="module")
def docker() -> DockerSandbox:
    ready, why = docker_status()
    if not ready:
        pytest.skip(f"Docker backend not usable: {why}")
    return DockerSandbox(run_id="test-check-programs")


def observed(error: RewardError | None) -> dict[str, str]:
    """What the hostile reward saw, from the error message its check reported."""
    assert error is not None, "the hostile reward passed its check"
    found = re.search(r"SEEN (\{.*?\})", error.message)
    assert error.category == ErrorCategory.RUNTIME_ERROR and found, (
        f"{error.category}: {error.message}\n{error.traceback}"
    )
    seen: dict[str, str] = json.loads(found.group(1))
    return seen


def test_the_smoke_test_refuses_io_uring_ptrace_and_sockets(
    docker: DockerSandbox, cartpole: TaskAdapter, states: Path, tmp_path: Path
) -> None:
    report = smoke_test(cartpole, ESCAPE + ATTEMPTS, tmp_path / "smoke", states, docker, LIMITS)
    assert observed(report.error) == REFUSED


def test_bank_scoring_refuses_io_uring_ptrace_and_sockets(
    docker: DockerSandbox, states: Path, tmp_path: Path
) -> None:
    scores = score_bank(ESCAPE + ATTEMPTS, tmp_path / "preference", states, docker, LIMITS)
    assert observed(scores.error) == REFUSED


def test_every_run_records_the_launcher_s_mechanisms(docker: DockerSandbox, tmp_path: Path) -> None:
    """The probe worker (what `doctor` runs) sees no TCP socket; the run names what held it."""
    run = docker.run("rewardsmith.programs.docker_probe", [], [tmp_path], LIMITS)
    assert run.returncode == 0, run.output
    facts = json.loads(run.output.strip().splitlines()[-1])
    assert facts["tcp_socket"] is False
    assert "seccomp" in run.mechanisms and run.mechanisms == docker.mechanisms()
    landlock = [m for m in run.mechanisms if m.startswith("landlock v")]
    assert landlock == ([f"landlock v{docker.landlock()}"] if docker.landlock() else [])


def test_what_the_record_names_is_what_holds(docker: DockerSandbox, tmp_path: Path) -> None:
    """A second seccomp filter (Docker's, then ours) on the program; with Landlock named, the
    container's root is not even listable."""
    code = """\
import json, os
status = dict(line.split(':\\t', 1) for line in open('/proc/self/status') if ':\\t' in line)
try:
    os.listdir('/')
    root = 'DONE'
except OSError as exc:
    root = 'denied: ' + exc.strerror
print(json.dumps({'filters': int(status['Seccomp_filters']), 'list /': root}))
"""
    run = docker.run("timeit", ["-n", "1", "-r", "1", code], [tmp_path], LIMITS)
    lines = [line for line in run.output.splitlines() if line.startswith("{")]
    assert run.returncode == 0 and lines, run.output
    seen = json.loads(lines[-1])
    assert seen["filters"] >= 2
    assert seen["list /"] == ("denied: Permission denied" if docker.landlock() else "DONE")


def test_a_program_the_launcher_cannot_confine_never_runs(
    docker: DockerSandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail closed: where seccomp cannot be installed, exit 126, the program never starts, and
    the run says why."""
    docker.landlock()  # probed (and kept) under the engine's own profile, as a run would be
    original = DockerSandbox._host_config

    def no_seccomp(self: DockerSandbox, *args: Any) -> Any:
        config = original(self, *args)
        config["SecurityOpt"] = [*config.get("SecurityOpt", []), f"seccomp={NO_SECCOMP_PROFILE}"]
        return config

    monkeypatch.setattr(DockerSandbox, "_host_config", no_seccomp)
    run = docker.run("rewardsmith.programs.docker_probe", [], [tmp_path], LIMITS)
    assert run.returncode == 126, run.output
    assert "rewardsmith worker ok" not in run.output
    assert "not confined" in run.output
    assert any("not confined" in warning for warning in run.warnings), run.warnings
    assert "seccomp" not in run.mechanisms


def test_doctor_shows_what_is_in_force_in_a_container(docker: DockerSandbox) -> None:
    from typer.testing import CliRunner

    from rewardsmith.cli import app

    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    backend = next(b for b in json.loads(result.output)["backends"] if b["name"] == "docker")
    assert backend["layers"]["in force"] == ", ".join(docker.mechanisms())
    assert backend["live"]["ok"] and backend["live"]["tcp_socket"] is False
