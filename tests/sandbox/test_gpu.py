"""GPU exposure for JAX workers: device files into the process sandbox, a GPU request to Docker.

No GPU here: the device list is replaced, and only the commands and requests are checked.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rewardsmith.sandbox import gpu, process_isolation
from rewardsmith.sandbox.executor import ProcessSandbox

FAKE = [Path("/dev/nvidia0"), Path("/dev/nvidiactl"), Path("/dev/nvidia-uvm")]


def test_no_gpu_here_changes_nothing(tmp_path: Path) -> None:
    if gpu.gpu_device_files():
        pytest.skip("this machine has NVIDIA device files")
    assert gpu.docker_device_requests() is None
    cmd, _ = ProcessSandbox().command("m", [], [tmp_path], [])
    assert "--dev-bind" not in cmd and not any("nvidia" in part for part in cmd)


def test_gpu_device_files_are_bound_and_granted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = ProcessSandbox()
    if sandbox.bwrap is None:
        pytest.skip("bubblewrap is not installed")
    monkeypatch.setattr(process_isolation, "gpu_device_files", lambda: FAKE)
    cmd, _ = sandbox.command("m", [], [tmp_path], [])
    pairs = list(itertools.pairwise(cmd))
    for device in FAKE:
        assert ("--dev-bind", str(device)) in pairs  # into bubblewrap's minimal /dev
        assert ("--write", str(device)) in pairs  # and Landlock's rules (with device ioctls)


def test_docker_requests_every_gpu_when_there_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu, "gpu_device_files", lambda: FAKE)
    assert gpu.gpu_present()
    [request] = gpu.docker_device_requests() or []
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]
