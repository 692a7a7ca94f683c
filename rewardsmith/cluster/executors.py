"""The executor a run trains its candidates with: this machine, or a Ray cluster."""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.extras import pip_install
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs.training import ProgressFn, TrainOutcome, train_reward
from rewardsmith.sandbox.types import Limits, Sandbox

EXECUTORS = ("local", "ray")


class Executor(Protocol):
    """Trains one reward and evaluates its policy; the candidate's files end up in
    `candidate_dir` on this machine."""

    name: str

    def train(
        self,
        adapter: TaskAdapter,
        job: TrainJob,
        reward_source: str | None,
        candidate_dir: Path,
        limits: Limits | None = None,
        on_progress: ProgressFn | None = None,
        resume: Mapping[str, bytes] | None = None,
    ) -> TrainOutcome:
        """As `train_reward`: a reward that fails comes back as an outcome carrying its error, not
        as an exception; `on_progress` may raise to cancel the job."""
        ...


class LocalExecutor:
    """On this machine, in this machine's sandbox (the default)."""

    name = "local"

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def train(
        self,
        adapter: TaskAdapter,
        job: TrainJob,
        reward_source: str | None,
        candidate_dir: Path,
        limits: Limits | None = None,
        on_progress: ProgressFn | None = None,
        resume: Mapping[str, bytes] | None = None,
    ) -> TrainOutcome:
        """`train_reward` in this process's sandbox; `candidate_dir` is written directly."""
        return train_reward(
            adapter, job, reward_source, candidate_dir, self.sandbox, limits, on_progress, resume
        )


def make_executor(name: str, address: str | None, sandbox: Sandbox) -> Executor:
    """`--executor NAME [--address A]`; the Ray one runs each job in `sandbox`'s kind of sandbox
    on the node that takes it."""
    if name == "local":
        return LocalExecutor(sandbox)
    if name == "ray":
        if importlib.util.find_spec("ray") is None:
            raise ValueError(f"--executor ray needs Ray: {pip_install('ray')}")
        from rewardsmith.cluster.ray_executor import RayExecutor

        return RayExecutor(address, sandbox=sandbox.name)
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
