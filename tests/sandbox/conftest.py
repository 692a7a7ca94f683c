"""The `sandbox` fixture: every available backend, Docker skipped with the reason when unusable.

`process` is the process backend as `auto` would pick it (bubblewrap where it works);
`process-nobwrap` is the same backend without bubblewrap, confined by Landlock, seccomp and the
`nobody` uid alone: what a machine with nothing but pip packages gets. The fast tier
(`-m "not slow"`) runs each check through `process` only.
"""

from __future__ import annotations

import pytest

from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.training import Sandbox


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
