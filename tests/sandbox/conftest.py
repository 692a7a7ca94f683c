"""The `sandbox` fixture: every available backend, Docker skipped with the reason when unusable.

`process` is the process backend as `auto` would pick it (bubblewrap where it works);
`process-nobwrap` is the same backend without bubblewrap, confined by Landlock, seccomp and the
`nobody` uid alone: what a machine with nothing but pip packages gets. The fast tier
(`-m "not slow"`) runs each check through `process` only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.smoke import record_states
from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Sandbox


@pytest.fixture(
    params=[
        "process",
        # The same attacks again through the other backends: the slow tier (CI) runs them all.
        pytest.param("process-nobwrap", marks=pytest.mark.slow),
        pytest.param("docker", marks=[pytest.mark.docker, pytest.mark.slow]),
    ]
)
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "docker":
        ready, why = docker_status()
        if not ready:
            pytest.skip(f"Docker backend not usable: {why}")
        return DockerSandbox()
    if request.param == "process-nobwrap":
        nobwrap = ProcessSandbox(use_bwrap=False)
        if not nobwrap.confined:
            pytest.skip("no Landlock here: without bubblewrap the process backend refuses")
        return nobwrap
    return ProcessSandbox()


@pytest.fixture(scope="session")
def cartpole() -> TaskAdapter:
    """The task the sandbox checks train and smoke-test on."""
    return load_task("cartpole")


@pytest.fixture(scope="session")
def states(cartpole: TaskAdapter, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Recorded random-policy transitions (no reward code): the smoke test's states, and a bank
    of 4 episodes to score."""
    return record_states(cartpole, tmp_path_factory.mktemp("states") / "states.npz", episodes=4)
