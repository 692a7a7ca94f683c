"""The `sandbox` fixture: every available backend, Docker skipped with the reason when unusable."""

from __future__ import annotations

import pytest

from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.training import Sandbox


@pytest.fixture(params=["process", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "docker":
        ready, why = docker_status()
        if not ready:
            pytest.skip(f"Docker backend not usable: {why}")
        return DockerSandbox()
    return ProcessSandbox()
