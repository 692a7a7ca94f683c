"""Choosing a sandbox backend: `auto` prefers Docker when its engine and image are ready."""

from __future__ import annotations

from dataclasses import dataclass

from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.training import Sandbox


@dataclass
class ChosenSandbox:
    sandbox: Sandbox
    reason: str

    def describe(self) -> str:
        return f"{self.sandbox.name} ({self.reason})"


def choose_sandbox(name: str = "auto") -> ChosenSandbox:
    """The backend for `--sandbox NAME`, with the reason it was chosen."""
    if name not in ("auto", "process", "docker"):
        raise ValueError(f"unknown sandbox {name!r}; choose auto, process or docker")
    if name in ("auto", "docker"):
        from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status

        ready, why = docker_status()
        if ready:
            return ChosenSandbox(DockerSandbox(), "engine and worker image ready")
        if name == "docker":
            raise ValueError(f"the Docker sandbox is not usable: {why}; run `rewardsmith doctor`")
        process = ProcessSandbox()
        return ChosenSandbox(process, f"Docker not usable: {why}; {process.isolation()}")
    process = ProcessSandbox()
    return ChosenSandbox(process, process.isolation())
