"""Train one reward in the sandbox, then score it with the separate evaluator.

Directory layout per candidate: `job/` (the only place the worker may write: reward, job file,
metrics, policy), `eval/` (written only by the evaluator, after the worker has been killed), and
the orchestrator's own `worker.log` and `evaluator.log` beside them, out of both programs' reach.
Both programs run through `runner.run_job`; what they write is read back through `records`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith import job_spec as files
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs.records import read_checkpoints, read_evaluation, read_progress, read_result
from rewardsmith.reward.errors import RewardError
from rewardsmith.runs import layout
from rewardsmith.sandbox.runner import bad_output, run_job
from rewardsmith.sandbox.runner import classify_failure as classify_failure
from rewardsmith.sandbox.types import Limits, SandboxRun
from rewardsmith.sandbox.types import Sandbox as Sandbox
from rewardsmith.sandbox.workdirs import remove
from rewardsmith.sandbox.worker_files import MissingWorkerFile, WorkerFileError

ProgressFn = Callable[[int, int], None]
WORKER_MODULE = "rewardsmith.programs.train_sb3"
EVALUATOR_MODULE = "rewardsmith.programs.evaluate_sb3"


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
    placement: dict[str, Any] = field(default_factory=dict)  # where it ran, if not here

    @property
    def fitness(self) -> float | None:
        """The evaluator's mean fitness, which selects candidates; None when training failed."""
        return self.evaluation.get("fitness")

    @property
    def success_rate(self) -> float | None:
        """The evaluation's success rate; None where the task defines no success or it failed."""
        return self.evaluation.get("success_rate")

    def final_components(self) -> dict[str, float]:
        """The reward's components at the last checkpoint; empty without checkpoints."""
        return dict(self.checkpoints[-1].get("components", {})) if self.checkpoints else {}

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON; `ray_executor.outcome_from_dict` rebuilds it from this."""
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
            **({"placement": self.placement} if self.placement else {}),
        }


def make_job(
    adapter: TaskAdapter,
    *,
    steps: int | None,
    seed: int,
    algo: str | None = None,
    backend: str = "sb3",
    search: bool = False,
) -> TrainJob:
    """A job with the task's tuned defaults, overridden where the user said otherwise.

    `backend="jax"` takes the task's JAX variant (Brax PPO; `search` picks its search budget)."""
    if backend != "sb3":
        from rewardsmith.jobs.training_jax import make_jax_job
        from rewardsmith.rl.jax import check_backend

        if algo not in (None, "ppo"):
            raise ValueError(f"the {backend} backend trains with PPO only; drop --algo {algo}")
        check_backend(backend, adapter.id, getattr(adapter, "source_path", None) is not None)
        return make_jax_job(adapter, steps=steps, seed=seed, search=search)
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
        steps=steps or (defaults.loop_steps if search else defaults.steps),
        seed=seed,
        # A task's environment count is tuned for its own learner (Meta-World's SAC steps four
        # at a time); SAC asked of a PPO task gets one.
        n_envs=defaults.n_envs if algo in ("ppo", defaults.algo) else 1,
        normalize_obs=defaults.normalize_obs,
        hyperparams=dict(defaults.hyperparams.get(algo, {})),
        eval_episodes=defaults.eval_episodes,
        uses_task_file=getattr(adapter, "source_path", None) is not None,
    )


def train_reward(
    adapter: TaskAdapter,
    job: TrainJob,
    reward_source: str | None,
    candidate_dir: Path,
    sandbox: Sandbox,
    limits: Limits | None = None,
    on_progress: ProgressFn | None = None,
    resume: Mapping[str, bytes] | None = None,
) -> TrainOutcome:
    """Train `reward_source` (None: the environment's own reward) and evaluate the policy.

    `resume` (`records.read_training_state` of an earlier job) continues that job's training
    from `job.start_steps`; the job folder is made fresh either way."""
    limits = limits or Limits()
    if resume and not job.start_steps:
        raise ValueError("a job continued from a saved state needs the steps it starts from")
    if job.backend == "jax":
        from rewardsmith.jobs.training_jax import train_reward_jax

        outcome: TrainOutcome = train_reward_jax(
            adapter, job, reward_source, candidate_dir, sandbox, limits, on_progress
        )
        return outcome
    start = time.monotonic()
    job_dir, eval_dir = candidate_dir / layout.JOB_DIR, candidate_dir / layout.EVAL_DIR
    remove(eval_dir)  # an interrupted attempt's evaluation must not outlive it
    job.env_reward = reward_source is None
    inputs = {files.REWARD_FILE: reward_source or "", files.JOB_FILE: job.to_json()}

    trained = run_job(
        sandbox,
        WORKER_MODULE,
        [str(job_dir)],
        workdir=job_dir,
        inputs={**inputs, **task_input(adapter), **(resume or {})},
        limits=limits,
        log_path=candidate_dir / layout.WORKER_LOG,
        read=read_result,
        on_poll=progress_poll(job_dir, job, on_progress),
    )
    outcome = TrainOutcome(
        ok=False,
        candidate_dir=candidate_dir,
        error=trained.error,
        warnings=list(trained.run.warnings),
    )
    if trained.record is not None:
        outcome.error, outcome.steps = trained.record.error, trained.record.steps
        outcome.warnings += [
            f"the reward process was {layer}; the sandbox around the learner still held it"
            for layer in trained.record.reward_confinement
            if layer.startswith("not confined further")
        ]
    _read_checkpoints(outcome, job_dir, trained.run)
    if outcome.error is None:
        outcome.error, outcome.evaluation = evaluate_policy(
            adapter, job, candidate_dir, sandbox, limits
        )
        outcome.ok = outcome.error is None
    if on_progress is not None and outcome.ok:
        on_progress(outcome.steps or job.target_steps, job.steps)
    outcome.wall_s = time.monotonic() - start
    return outcome


def progress_poll(
    job_dir: Path, job: TrainJob, on_progress: ProgressFn | None
) -> Callable[[], None] | None:
    """What the runner calls while a trainer runs: the steps it reports, passed to
    `on_progress`. Never blocks: the progress file is read like any worker file."""
    if on_progress is None:
        return None
    report = on_progress

    def poll() -> None:
        steps = read_progress(job_dir)
        if steps is not None:
            report(steps, job.steps)

    return poll


def task_input(adapter: TaskAdapter) -> dict[str, Path]:
    """A task file's copy as a program's input (built-in tasks need none)."""
    task_path = getattr(adapter, "source_path", None)
    return {files.TASK_FILE: Path(task_path)} if task_path is not None else {}


def _read_checkpoints(outcome: TrainOutcome, job_dir: Path, run: SandboxRun) -> None:
    """The reflection log, kept even when training failed; a bad one fails a passing candidate
    (a lone warning when the candidate failed anyway)."""
    try:
        outcome.checkpoints, notes = read_checkpoints(job_dir)
        outcome.warnings += notes
    except MissingWorkerFile:
        pass
    except WorkerFileError as bad:
        if outcome.error is None:
            outcome.error = bad_output(bad, run, None)
        else:
            outcome.warnings.append(str(bad))


def evaluate_policy(
    adapter: TaskAdapter,
    job: TrainJob,
    candidate_dir: Path,
    sandbox: Sandbox,
    limits: Limits,
    module: str = EVALUATOR_MODULE,
    readable: Sequence[Path] = (),
) -> tuple[RewardError | None, dict[str, Any]]:
    """Run a backend's reward-free evaluator in its own sandbox; only `eval/` is writable to it,
    the trained policy in `job/` is readable, and so is each of `readable` (its arguments after
    the two folders)."""
    job_dir, eval_dir = candidate_dir / layout.JOB_DIR, candidate_dir / layout.EVAL_DIR
    evaluated = run_job(
        sandbox,
        module,
        [str(eval_dir), str(job_dir), *map(str, readable)],
        workdir=eval_dir,
        inputs={files.JOB_FILE: job.to_json(), **task_input(adapter)},
        limits=limits,
        log_path=candidate_dir / layout.EVALUATOR_LOG,
        read=read_evaluation,
        what="evaluation failed",
        readable=[job_dir, *readable],
    )
    return evaluated.error, evaluated.record or {}
