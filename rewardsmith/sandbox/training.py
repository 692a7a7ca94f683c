"""Train one reward in the sandbox, then score it with the separate evaluator.

Directory layout per candidate: `job/` (the only place the worker may write: reward, job file,
metrics, policy) and `eval/` (written only by the evaluator, after the worker has been killed).
"""

from __future__ import annotations

import json
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox import job as files
from rewardsmith.sandbox.executor import Limits, SandboxRun
from rewardsmith.sandbox.job import TrainJob

ProgressFn = Callable[[int, int], None]


class Sandbox(Protocol):
    name: str

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun: ...


@dataclass
class TrainOutcome:
    """The result of training one reward: the trusted evaluation, or a named error."""

    ok: bool
    candidate_dir: Path
    error: RewardError | None = None
    evaluation: dict[str, Any] = field(default_factory=dict)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    steps: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def fitness(self) -> float | None:
        return self.evaluation.get("fitness")

    @property
    def success_rate(self) -> float | None:
        return self.evaluation.get("success_rate")

    def final_components(self) -> dict[str, float]:
        return dict(self.checkpoints[-1].get("components", {})) if self.checkpoints else {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "error": self.error.to_dict() if self.error else None,
            "fitness": self.fitness,
            "success_rate": self.success_rate,
            "evaluation": self.evaluation,
            "components": self.final_components(),
            "checkpoints": self.checkpoints,
            "wall_s": self.wall_s,
            "steps": self.steps,
            "warnings": self.warnings,
        }


def make_job(
    adapter: TaskAdapter, *, steps: int | None, seed: int, algo: str | None = None
) -> TrainJob:
    """A job with the task's tuned defaults, overridden where the user said otherwise."""
    defaults = adapter.training
    algo = algo or defaults.algo
    if algo == "sac":
        import gymnasium as gym

        env = adapter.make_env()
        discrete = isinstance(env.action_space, gym.spaces.Discrete)
        env.close()
        if discrete:
            raise ValueError(
                f"SAC needs continuous actions, but {adapter.id} has discrete actions; use --algo ppo"
            )
    return TrainJob(
        task_id=adapter.id,
        algo=algo,
        steps=steps or defaults.steps,
        seed=seed,
        n_envs=defaults.n_envs if algo == "ppo" else 1,
        normalize_obs=defaults.normalize_obs,
        hyperparams=dict(defaults.hyperparams.get(algo, {})),
        eval_episodes=defaults.eval_episodes,
        uses_task_file=getattr(adapter, "source_path", None) is not None,
    )


def _read_checkpoints(job_dir: Path) -> list[dict[str, Any]]:
    path = job_dir / files.METRICS_FILE
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut off by a kill; what came before is intact
    return records


def classify_failure(run: SandboxRun, limits: Limits) -> RewardError:
    """Turn an abnormal sandbox exit into the one named category the user sees."""
    tail = run.output[-2000:]
    if run.limit_hit == "processes":
        return RewardError(
            ErrorCategory.PROCESS_LIMIT,
            f"the worker hit the limit of {limits.processes} processes/threads; it was killed",
            traceback=tail,
        )
    if run.timed_out:
        return RewardError(
            ErrorCategory.TIMEOUT,
            f"training exceeded the {limits.wall_s:.0f} s wall-clock limit; the process group was killed",
            traceback=tail,
        )
    sig = run.signal
    if sig == signal.SIGXCPU:
        return RewardError(
            ErrorCategory.TIMEOUT,
            f"training exceeded the {limits.cpu_s} s CPU-time limit",
            traceback=tail,
        )
    if run.limit_hit == "memory" or "MemoryError" in tail or sig == signal.SIGKILL:
        return RewardError(
            ErrorCategory.MEMORY_LIMIT,
            f"the worker ran out of its {limits.memory_mb} MB memory limit",
            traceback=tail,
        )
    if "Resource temporarily unavailable" in tail or "can't start new thread" in tail:
        return RewardError(
            ErrorCategory.PROCESS_LIMIT,
            f"the worker hit the limit of {limits.processes} processes/threads",
            traceback=tail,
        )
    if sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals.__members__.values() else str(sig)
        return RewardError(
            ErrorCategory.CRASHED, f"the worker was killed by signal {name}", traceback=tail
        )
    if run.returncode == 0:
        return RewardError(
            ErrorCategory.SANDBOX_DIED,
            "the worker exited without writing a result (exit status 0 is not success)",
            traceback=tail,
        )
    return RewardError(
        ErrorCategory.CRASHED, f"the worker exited with status {run.returncode}", traceback=tail
    )


def train_reward(
    adapter: TaskAdapter,
    job: TrainJob,
    reward_source: str | None,
    candidate_dir: Path,
    sandbox: Sandbox,
    limits: Limits | None = None,
    on_progress: ProgressFn | None = None,
) -> TrainOutcome:
    """Train `reward_source` (None: the environment's own reward) and evaluate the policy."""
    limits = limits or Limits()
    start = time.monotonic()
    job_dir, eval_dir = candidate_dir / "job", candidate_dir / "eval"
    for path in (job_dir, eval_dir):
        if path.exists():
            shutil.rmtree(path)  # an interrupted attempt: start this candidate afresh
        path.mkdir(parents=True)
    job.env_reward = reward_source is None
    (job_dir / files.REWARD_FILE).write_text(reward_source or "")
    job.write(job_dir)
    job.write(eval_dir)
    task_path = getattr(adapter, "source_path", None)
    if task_path is not None:
        shutil.copyfile(task_path, job_dir / files.TASK_FILE)
        shutil.copyfile(task_path, eval_dir / files.TASK_FILE)

    def poll() -> None:
        if on_progress is None:
            return
        try:
            progress = json.loads((job_dir / files.PROGRESS_FILE).read_text())
            on_progress(int(progress["steps"]), job.steps)
        except (OSError, ValueError, KeyError, TypeError):
            pass

    run = sandbox.run("rewardsmith.sandbox.worker", [str(job_dir)], [job_dir], limits, poll)
    (candidate_dir / "worker.log").write_text(run.output)
    outcome = TrainOutcome(
        ok=False,
        candidate_dir=candidate_dir,
        checkpoints=_read_checkpoints(job_dir),
        warnings=run.warnings,
    )
    result_path = job_dir / files.RESULT_FILE
    if run.returncode != 0 or run.timed_out or run.limit_hit or not result_path.exists():
        outcome.error = classify_failure(run, limits)
    else:
        result = json.loads(result_path.read_text())
        if result.get("status") != "ok":
            outcome.error = RewardError.from_dict(result)
        else:
            outcome.steps = int(result.get("steps", job.steps))
    if outcome.error is None:
        outcome.error, outcome.evaluation = _evaluate(job_dir, eval_dir, sandbox, limits)
        outcome.ok = outcome.error is None
    if on_progress is not None and outcome.ok:
        on_progress(job.steps, job.steps)
    outcome.wall_s = time.monotonic() - start
    return outcome


def _evaluate(
    job_dir: Path, eval_dir: Path, sandbox: Sandbox, limits: Limits
) -> tuple[RewardError | None, dict[str, Any]]:
    """Run the reward-free evaluator in its own sandbox; only `eval/` is writable to it."""
    run = sandbox.run(
        "rewardsmith.sandbox.evaluate",
        [str(eval_dir), str(job_dir)],
        [eval_dir],
        limits,
        readable=[job_dir],
    )
    (eval_dir.parent / "evaluator.log").write_text(run.output)
    eval_path = eval_dir / files.EVAL_FILE
    if run.returncode != 0 or not eval_path.exists():
        error = classify_failure(run, limits)
        error.message = "evaluation failed: " + error.message
        return error, {}
    return None, json.loads(eval_path.read_text())
