"""Train candidates as Ray tasks on a cluster the user already has (`--executor ray`).

Each candidate's training and its reward-free evaluation run as one Ray task with declared
resources, inside the same sandbox as on this machine (the node picks its own backend by the
same rule, `--sandbox`). What travels out: the task id (and a task file with the reward files it
names), the job, the reward's source and the limits. What comes back: the outcome and every
regular file of the candidate's folder (policy, metrics, logs, evaluation), written into the run
store here. The store never leaves this machine.

Faults: Ray reruns a task whose node or worker died, up to `retries` times, on whatever node has
room; each start is counted by a small actor beside the driver, so the outcome says on which
node the job finished and after how many attempts. A driver that dies loses nothing that
finished: its outcomes are in the store, and `rewardsmith resume` trains only what is left.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.cluster.transfer import pack_dir, unpack_into
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs.training import ProgressFn, TrainOutcome
from rewardsmith.sandbox.types import Limits

RETRIES = 2  # reruns of a task whose node or worker died
POLL_S = 0.5  # how often a waiting driver checks for cancellation


def quiet_ray_environment() -> None:
    """Settings every Ray process of ours gets: no usage reporting (nothing leaves the cluster)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def connect(address: str | None) -> bool:
    """`ray.init` unless this process is connected already; True if it connected now.

    `ray.init` makes SIGTERM a bare `sys.exit`, which would skip the CLI's clean stop (sandboxes
    killed, the run marked interrupted, the resume command printed): the handlers this process
    had are put back."""
    quiet_ray_environment()
    import ray

    if ray.is_initialized():
        return False
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    ray.init(address=address, log_to_driver=False, include_dashboard=False)
    if threading.current_thread() is threading.main_thread():
        for sig, handler in kept.items():
            if handler is not None:
                signal.signal(sig, handler)
    return True


@dataclass
class RemoteTraining:
    """One candidate's job as it travels to a node."""

    key: str  # names the candidate in the attempt log
    task_id: str
    task_files: dict[str, bytes]  # a task file and its reward files, or empty for a built-in
    job: TrainJob
    reward_source: str | None
    limits: Limits
    sandbox: str
    resume: dict[str, bytes] | None = None  # the saved state a continued job starts from


def _task_files(adapter: TaskAdapter) -> dict[str, bytes]:
    source = getattr(adapter, "source_path", None)
    if source is None:
        return {}
    from rewardsmith.envs.task_copy import copy_task

    with tempfile.TemporaryDirectory(prefix="rewardsmith-task-") as folder:
        copy_task(Path(source), Path(folder))
        return pack_dir(Path(folder))


def train_on_node(spec: RemoteTraining, attempts: Any) -> dict[str, Any]:
    """The Ray task: train and evaluate in a scratch folder on this node, send the folder back."""
    import ray

    from rewardsmith.envs import load_task
    from rewardsmith.jobs.training import train_reward
    from rewardsmith.runs.layout import TASK_COPY
    from rewardsmith.sandbox.backends import choose_sandbox

    node = ray.get_runtime_context().get_node_id()
    attempt = ray.get(attempts.start.remote(spec.key, node))
    with tempfile.TemporaryDirectory(prefix="rewardsmith-job-") as scratch:
        task_file = None
        if spec.task_files:
            unpack_into(spec.task_files, Path(scratch) / "task")
            task_file = Path(scratch) / "task" / TASK_COPY
        adapter = load_task(spec.task_id, task_file)
        candidate = Path(scratch) / "candidate"
        sandbox = choose_sandbox(spec.sandbox).sandbox
        outcome = train_reward(
            adapter,
            spec.job,
            spec.reward_source,
            candidate,
            sandbox,
            spec.limits,
            None,
            spec.resume,
        )
        return {
            "outcome": outcome.to_dict(),
            "files": pack_dir(candidate),
            "node": node,
            "attempt": attempt,
        }


class AttemptLog:
    """Counts the starts of each job (a Ray actor beside the driver): retries become visible."""

    def __init__(self) -> None:
        self.starts: dict[str, list[str]] = {}

    def start(self, key: str, node: str) -> int:
        """Record a start of job `key` on `node`; the attempt number, 1 for the first."""
        self.starts.setdefault(key, []).append(node)
        return len(self.starts[key])

    def nodes(self, key: str) -> list[str]:
        """The nodes job `key` started on, in order (empty for a key never started)."""
        return list(self.starts.get(key, []))

    def all(self) -> dict[str, list[str]]:
        """The whole log, job key to the nodes it started on: what retries happened where."""
        return {key: list(nodes) for key, nodes in self.starts.items()}


class RayExecutor:
    """Trains candidates as Ray tasks; `address` as for `ray.init` ("auto", "ray://HOST:PORT")."""

    name = "ray"

    def __init__(self, address: str | None, sandbox: str, retries: int = RETRIES) -> None:
        connect(address)
        import ray

        self._ray = ray
        self.sandbox, self.retries = sandbox, retries
        on_head = {"node:__internal_head__": 0.001}  # beside the driver, not on a worker node
        self.attempts: Any = ray.remote(num_cpus=0, resources=on_head)(AttemptLog).remote()
        self._train = ray.remote(train_on_node)

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
        """Train on the cluster; files land in `candidate_dir` here. `on_progress` is called
        while waiting (with 0 steps done: the node does not stream progress) and may raise to
        cancel the task."""
        limits = limits or Limits()
        key = f"{candidate_dir}#{time.monotonic_ns()}"
        spec = RemoteTraining(
            key=key,
            task_id=adapter.id,
            task_files=_task_files(adapter),
            job=job,
            reward_source=reward_source,
            limits=limits,
            sandbox=self.sandbox,
            resume=dict(resume) if resume else None,
        )
        resources = {"num_cpus": 1, "num_gpus": 1 if self._wants_gpu(job) else 0}
        ref = self._train.options(max_retries=self.retries, **resources).remote(spec, self.attempts)
        result = self._wait(ref, job, on_progress)
        unpack_into(result["files"], candidate_dir)
        return self._outcome(result, candidate_dir, key)

    def _wants_gpu(self, job: TrainJob) -> bool:
        gpus = self._ray.cluster_resources().get("GPU", 0)
        return job.backend == "jax" and gpus >= 1

    def _wait(self, ref: Any, job: TrainJob, on_progress: ProgressFn | None) -> dict[str, Any]:
        try:
            while True:
                done, _ = self._ray.wait([ref], timeout=POLL_S)
                if done:
                    return dict(self._ray.get(ref))
                if on_progress is not None:
                    on_progress(0, job.steps)
        except BaseException:
            self._ray.cancel(ref, force=True)  # Ctrl-C or a cancelled run: stop the node's job
            raise

    def _outcome(self, result: dict[str, Any], candidate_dir: Path, key: str) -> TrainOutcome:
        record = result["outcome"]
        outcome = outcome_from_dict(record, candidate_dir)
        nodes = self._ray.get(self.attempts.nodes.remote(key))
        outcome.placement = {
            "executor": "ray",
            "node": result["node"],
            "attempts": result["attempt"],
            "nodes_tried": nodes,
        }
        if result["attempt"] > 1:
            outcome.warnings.append(
                f"trained on node {result['node'][:12]} after {result['attempt'] - 1} failed "
                "attempt(s): a node or worker was lost mid-job"
            )
        return outcome

    def close(self) -> None:
        """Leave the cluster running (it is the user's); only this driver disconnects."""
        self._ray.shutdown()


def outcome_from_dict(record: dict[str, Any], candidate_dir: Path) -> TrainOutcome:
    """A TrainOutcome rebuilt from its `to_dict()` (as it came back from a node)."""
    from rewardsmith.reward.errors import RewardError

    error = record.get("error")
    return TrainOutcome(
        ok=bool(record["ok"]),
        candidate_dir=candidate_dir,
        error=RewardError.from_dict(error) if error else None,
        evaluation=dict(record.get("evaluation") or {}),
        checkpoints=list(record.get("checkpoints") or []),
        wall_s=float(record.get("wall_s") or 0.0),
        steps=int(record.get("steps") or 0),
        warnings=list(record.get("warnings") or []),
    )


def cluster_summary(address: str | None) -> dict[str, Any]:
    """Nodes, CPUs and GPUs of the cluster at `address`, for `rewardsmith doctor`."""
    started = connect(address)
    import ray

    try:
        alive = [n for n in ray.nodes() if n.get("Alive")]
        return {
            "nodes": len(alive),
            "cpus": sum(n.get("Resources", {}).get("CPU", 0) for n in alive),
            "gpus": sum(n.get("Resources", {}).get("GPU", 0) for n in alive),
            "addresses": sorted({n.get("NodeManagerAddress", "?") for n in alive}),
        }
    finally:
        if started:
            ray.shutdown()
