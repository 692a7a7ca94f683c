"""Train one reward on the JAX backend: trace it, train on the export, evaluate without it.

Three sandboxed programs, each with its own writable directory beside the others:
`trace/` (the tracer: the only one that runs the reward's Python), `job/` (the trusted trainer,
given the export as an input) and `eval/` (the reward-free evaluator). The orchestrator runs no
reward code and imports no JAX; it passes the export's bytes from the tracer to the trainer
without opening them. Records come back through the same readers as the SB3 backend's.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rewardsmith import job_spec as files
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs import compile_store
from rewardsmith.jobs.records import read_result
from rewardsmith.reward.errors import RewardError
from rewardsmith.runs import layout
from rewardsmith.sandbox.runner import run_job
from rewardsmith.sandbox.types import Limits, Sandbox
from rewardsmith.sandbox.workdirs import remove

WORKER_MODULE = "rewardsmith.programs.train_jax"
EVALUATOR_MODULE = "rewardsmith.programs.evaluate_jax"
EXPORT_FILE = "reward.jaxexport"


def make_jax_job(
    adapter: TaskAdapter, *, steps: int | None, seed: int, search: bool = False
) -> TrainJob:
    """A job with the JAX variant's own budget and Brax PPO settings."""
    from dataclasses import asdict

    from rewardsmith.rl.jax.budgets import jax_budget

    task = jax_budget(adapter.id)
    default = task.search_steps if search else task.steps
    return TrainJob(
        task_id=adapter.id,
        algo="ppo",
        steps=steps or default,
        seed=seed,
        n_envs=task.ppo.num_envs,
        normalize_obs=task.ppo.normalize_observations,
        hyperparams=asdict(task.ppo),
        eval_episodes=adapter.training.eval_episodes,
        backend="jax",
    )


def trace_for_training(
    adapter: TaskAdapter, reward_source: str, candidate_dir: Path, sandbox: Sandbox, limits: Limits
) -> tuple[bytes, RewardError | None]:
    """Record random-policy states (no reward code) and trace the reward in the sandbox."""
    from rewardsmith.jobs.smoke import record_states
    from rewardsmith.jobs.trace_jax import trace_reward

    candidate_dir.mkdir(parents=True, exist_ok=True)
    states = candidate_dir / layout.TRACE_STATES
    record_states(adapter, states)
    try:
        report = trace_reward(
            adapter.id,
            reward_source,
            candidate_dir / layout.TRACE_DIR,
            states,
            sandbox,
            limits,
            candidate_dir / layout.TRACER_LOG,
        )
    finally:
        states.unlink(missing_ok=True)
    return report.export, report.error


def train_reward_jax(
    adapter: TaskAdapter,
    job: TrainJob,
    reward_source: str | None,
    candidate_dir: Path,
    sandbox: Sandbox,
    limits: Limits,
    on_progress: Any = None,
) -> Any:
    """`sandbox.training.train_reward` for `job.backend == "jax"`; the same `TrainOutcome`."""
    from rewardsmith.jobs.training import TrainOutcome, _read_checkpoints, progress_poll

    start = time.monotonic()
    job_dir, eval_dir = candidate_dir / layout.JOB_DIR, candidate_dir / layout.EVAL_DIR
    remove(eval_dir)
    job.env_reward = reward_source is None
    outcome = TrainOutcome(ok=False, candidate_dir=candidate_dir)
    inputs: dict[str, Any] = {files.JOB_FILE: job.to_json()}
    if reward_source is not None:
        export, error = trace_for_training(adapter, reward_source, candidate_dir, sandbox, limits)
        if error is not None:
            outcome.error, outcome.wall_s = error, time.monotonic() - start
            return outcome
        inputs[files.REWARD_FILE] = reward_source  # kept for the record; the trainer never runs it
        inputs[EXPORT_FILE] = export

    trained = run_job(
        sandbox,
        WORKER_MODULE,
        [str(job_dir)],
        workdir=job_dir,
        inputs=inputs,
        limits=limits,
        log_path=candidate_dir / layout.WORKER_LOG,
        read=read_result,
        on_poll=progress_poll(job_dir, job, on_progress),
    )
    outcome.error, outcome.warnings = trained.error, list(trained.run.warnings)
    if trained.record is not None:
        outcome.error, outcome.steps = trained.record.error, trained.record.steps
    _read_checkpoints(outcome, job_dir, trained.run)
    if outcome.error is None:
        outcome.error, outcome.evaluation = evaluate_jax_policy(
            adapter, job, candidate_dir, sandbox, limits
        )
        outcome.ok = outcome.error is None
    if on_progress is not None and outcome.ok:
        on_progress(job.steps, job.steps)
    outcome.wall_s = time.monotonic() - start
    return outcome


def evaluate_jax_policy(
    adapter: TaskAdapter, job: TrainJob, candidate_dir: Path, sandbox: Sandbox, limits: Limits
) -> tuple[RewardError | None, dict[str, Any]]:
    """The reward-free JAX evaluator on the candidate's trained policy, reading the task's
    compiled programs from the cache and leaving the ones it compiled there."""
    from rewardsmith.jobs.training import evaluate_policy

    store = compile_store.store_for(job.task_id, "evaluator")
    result = evaluate_policy(
        adapter, job, candidate_dir, sandbox, limits, EVALUATOR_MODULE, [store] if store else []
    )
    if store is not None:
        compile_store.harvest(candidate_dir / layout.EVAL_DIR, store)
    return result
