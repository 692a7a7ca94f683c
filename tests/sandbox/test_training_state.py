"""A job continued from a saved state is the learner that stopped: steps, optimiser, statistics."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import VecNormalize

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.jobs.records import read_training_state
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.rl.sb3.deferred_rewards import ReturnScaler
from rewardsmith.rl.sb3.policy_io import algorithm_kwargs, build_model
from rewardsmith.rl.sb3.training_state import restore_training_state, save_training_state
from rewardsmith.rl.sb3.vec_reward import make_vec_env
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

PENDULUM = load_task("pendulum")
LIMITS = Limits(wall_s=300)


@pytest.mark.slow
def test_a_learner_restored_from_its_saved_state_matches_it(tmp_path: Path) -> None:
    # Pendulum's own PPO settings (gSDE, Adam) with a small rollout: what is saved is what matters.
    job = make_job(PENDULUM, steps=4096, seed=3)
    job.hyperparams.update(n_steps=128, n_epochs=2)
    env = VecNormalize(make_vec_env(PENDULUM, job.n_envs, job.seed), norm_reward=False)
    model = build_model(job, env)
    scaler = ReturnScaler(job.n_envs, 0.99)
    model.learn(total_timesteps=1024)  # two rollouts of 4 x 128 steps
    scaler.ret_rms.update(np.array([1.0, 3.0, 5.0]))
    save_training_state(model, env, scaler, tmp_path)
    for name in files.TRAINING_STATE_FILES:  # the inputs a continued job gets
        (tmp_path / f"{files.RESUME_PREFIX}{name}").write_bytes((tmp_path / name).read_bytes())

    fresh_env = VecNormalize(make_vec_env(PENDULUM, job.n_envs, job.seed), norm_reward=False)
    fresh, fresh_scaler = build_model(job, fresh_env), ReturnScaler(job.n_envs, 0.99)
    restore_training_state(fresh, fresh_env, fresh_scaler, tmp_path, model.num_timesteps)

    assert fresh.num_timesteps == model.num_timesteps
    for key, value in model.policy.state_dict().items():
        assert torch.equal(value, fresh.policy.state_dict()[key])
    kept, restored = model.policy.optimizer.state_dict(), fresh.policy.optimizer.state_dict()
    assert kept["state"] and kept["state"].keys() == restored["state"].keys()
    for key, moments in kept["state"].items():
        assert torch.equal(moments["exp_avg_sq"], restored["state"][key]["exp_avg_sq"])
    np.testing.assert_array_equal(fresh_env.obs_rms.mean, env.obs_rms.mean)
    assert fresh_env.obs_rms.count == env.obs_rms.count
    assert fresh_scaler.ret_rms.count == scaler.ret_rms.count
    np.testing.assert_array_equal(fresh_scaler.ret_rms.var, scaler.ret_rms.var)


def test_a_stopped_run_sees_the_learning_rate_of_the_whole_run() -> None:
    job = replace(make_job(PENDULUM, steps=10_000, seed=0), hyperparams={"learning_rate": "lin_1"})
    whole = algorithm_kwargs(job)["learning_rate"]
    first_half = algorithm_kwargs(replace(job, stop_at=5_000))["learning_rate"]
    # At the end of the first half (its own progress left: 0) the whole run is half done.
    assert first_half(0.0) == pytest.approx(whole(0.5)) == pytest.approx(0.5)
    assert first_half(1.0) == pytest.approx(whole(1.0))


@pytest.mark.slow
def test_training_continues_from_a_saved_state_and_the_steps_add_up(tmp_path: Path) -> None:
    human = PENDULUM.reward_source("human")
    job = replace(make_job(PENDULUM, steps=8192, seed=1), stop_at=4096, n_checkpoints=4)
    first = train_reward(PENDULUM, job, human, tmp_path / "a", ProcessSandbox(), LIMITS)
    assert first.ok, first.error
    assert 4096 <= first.steps < 8192
    state = read_training_state(tmp_path / "a" / "job")
    assert {f"{files.RESUME_PREFIX}{files.OPTIMIZER_FILE}"} <= state.keys()

    rest = replace(job, stop_at=None, start_steps=first.steps)
    second = train_reward(
        PENDULUM, rest, human, tmp_path / "b", ProcessSandbox(), LIMITS, None, state
    )
    assert second.ok, second.error
    assert second.steps >= 8192
    # The continued job's checkpoints carry on the whole run's grid, after where it started.
    assert second.checkpoints[0]["step"] > first.steps
    assert second.fitness is not None
