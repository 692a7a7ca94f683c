"""The GPU a sandboxed JAX worker may use: NVIDIA device files, and Docker's GPU request.

Only device files are exposed (no other host path): the process backend binds them into its
minimal `/dev` and grants them in its Landlock rules (read, write and device ioctls); the Docker
backend asks the engine for the GPUs (`device_requests`, served by the NVIDIA container toolkit),
which also brings the driver's libraries. Nothing changes on a machine without an NVIDIA device.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

DEVICE_PATTERNS = (
    "/dev/nvidia[0-9]*",
    "/dev/nvidiactl",
    "/dev/nvidia-uvm",
    "/dev/nvidia-uvm-tools",
    "/dev/nvidia-modeset",
)


def gpu_device_files() -> list[Path]:
    """The NVIDIA device files present on this host (none without a GPU)."""
    found = {Path(p) for pattern in DEVICE_PATTERNS for p in glob.glob(pattern)}
    return sorted(p for p in found if p.is_char_device())


def gpu_present() -> bool:
    """Whether a GPU itself is here (`/dev/nvidiaN`), not just the driver's control files."""
    return any(p.name[len("nvidia") :].isdigit() for p in gpu_device_files())


def docker_device_requests() -> list[Any] | None:
    """Every GPU for the container when the host has one (None: no request at all)."""
    if not gpu_present():
        return None
    from docker.types import DeviceRequest

    return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
