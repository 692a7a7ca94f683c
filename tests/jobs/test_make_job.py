"""`make_job`: a task's environment count goes with the learner it was tuned for."""

from __future__ import annotations

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TrainingDefaults
from rewardsmith.jobs.training import make_job


def test_sac_steps_the_tasks_own_environment_count() -> None:
    """Meta-World's SAC steps four environments at a time: the job must keep them."""
    adapter = load_task("pendulum")  # continuous actions, made a SAC task here
    adapter.training = TrainingDefaults(algo="sac", steps=1000, n_envs=4, hyperparams={"sac": {}})
    job = make_job(adapter, steps=None, seed=0)
    assert (job.algo, job.n_envs, job.steps) == ("sac", 4, 1000)


def test_sac_asked_of_a_ppo_task_steps_one_environment() -> None:
    """Pendulum's PPO runs several environments; `--algo sac` on it still trains on one."""
    adapter = load_task("pendulum")
    assert adapter.training.algo == "ppo" and adapter.training.n_envs > 1
    assert make_job(adapter, steps=1000, seed=0, algo="sac").n_envs == 1
    assert make_job(adapter, steps=1000, seed=0).n_envs == adapter.training.n_envs
