"""The numpy actor gives SB3's deterministic action for every policy shape the tasks train, and
refuses layer files that do not fit the job; the reward-free programs start without torch."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs.training import make_job
from rewardsmith.programs.evaluate_sb3 import trained_policy
from rewardsmith.rl.sb3.actor import (
    CATEGORICAL,
    CLIPPED_MEAN,
    SQUASHED_MEAN,
    ActorFileError,
    actor_kind,
    load_actor,
)
from rewardsmith.rl.sb3.policy_io import build_model, save_actor
from rewardsmith.rl.sb3.vec_reward import make_vec_env
from rewardsmith.sandbox.worker_files import WorkerFileError

CASES = {
    # task, algo, extra hyperparameters, the head the actor uses
    "ppo-discrete": ("cartpole", "ppo", {}, CATEGORICAL),
    "ppo-box-gsde-relu": (
        "pendulum",
        "ppo",
        {
            "use_sde": True,
            "policy_kwargs": {"net_arch": {"pi": [32], "vf": [16]}, "activation_fn": "relu"},
        },
        CLIPPED_MEAN,
    ),
    "ppo-box-elu": (
        "mountaincar-continuous",
        "ppo",
        {"policy_kwargs": {"activation_fn": "elu"}},
        CLIPPED_MEAN,
    ),
    "sac-box": ("pendulum", "sac", {"policy_kwargs": {"net_arch": [64, 64]}}, SQUASHED_MEAN),
}


def _job(task_id: str, algo: str, extra: dict[str, Any]) -> TrainJob:
    job = make_job(load_task(task_id), steps=256, seed=1)
    hyperparams = {"learning_starts": 10} if algo == "sac" else {}
    return TrainJob(
        task_id=task_id,
        algo=algo,
        steps=256,
        seed=1,
        n_envs=1,
        normalize_obs=False,
        hyperparams={**hyperparams, **extra},
        n_checkpoints=job.n_checkpoints,
    )


@pytest.mark.parametrize("case", list(CASES))
def test_numpy_gives_sb3s_deterministic_action(case: str, tmp_path: Path) -> None:
    task_id, algo, extra, kind = CASES[case]
    adapter = load_task(task_id)
    job = _job(task_id, algo, extra)
    model = build_model(job, make_vec_env(adapter, 1, 1))
    with torch.no_grad():  # weights far from the initial ones, so bounds and squashing matter
        for parameter in model.policy.parameters():
            parameter.add_(torch.randn_like(parameter))
    save_actor(model, tmp_path / files.ACTOR_FILE)
    env = adapter.make_env()
    assert actor_kind(job, env.observation_space, env.action_space) == kind
    with np.load(tmp_path / files.ACTOR_FILE, allow_pickle=False) as saved:
        arrays = {name: saved[name] for name in saved.files}
    act = load_actor(arrays, job, env.observation_space, env.action_space)

    obs = np.random.default_rng(0).normal(scale=3.0, size=(256, *env.observation_space.shape))
    expected = model.predict(obs, deterministic=True)[0]
    got = act(obs)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if kind == CATEGORICAL:
        assert np.array_equal(got, expected)
        assert len(np.unique(got)) > 1
    else:
        # Both sum in float32, in orders that differ with the CPU's vector width; with weights
        # this far from the initial ones the sums cancel from the hundreds down to the action,
        # so 1e-5 held on one host and missed by 2e-5 on another (an AMD EPYC). 1e-4 of a
        # [-1, 1] action is still the same action.
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
        low, high = env.action_space.low, env.action_space.high
        assert np.any(got == low) or np.any(got == high) or kind == SQUASHED_MEAN
        assert np.all((got >= low) & (got <= high))


def test_policies_numpy_does_not_cover_rebuild_the_learner() -> None:
    env = load_task("pendulum").make_env()
    spaces = (env.observation_space, env.action_space)
    assert actor_kind(_job("pendulum", "sac", {"use_sde": True}), *spaces) is None
    squashed = {"use_sde": True, "policy_kwargs": {"squash_output": True}}
    assert actor_kind(_job("pendulum", "ppo", squashed), *spaces) is None
    assert (
        actor_kind(_job("pendulum", "ppo", {"policy_kwargs": {"activation_fn": "silu"}}), *spaces)
        is None
    )


def _good_layers() -> dict[str, np.ndarray]:
    f32 = np.float32
    return {
        "hidden_weight_0": np.ones((8, 4), f32),
        "hidden_bias_0": np.zeros(8, f32),
        "head_weight": np.ones((2, 8), f32),
        "head_bias": np.zeros(2, f32),
    }


def test_layers_that_do_not_fit_the_job_are_refused() -> None:
    env = load_task("cartpole").make_env()
    job = _job("cartpole", "ppo", {})
    spaces = (env.observation_space, env.action_space)
    f32 = np.float32
    good = _good_layers()
    assert load_actor(good, job, *spaces)(np.ones((3, 4))).shape == (3,)
    bad_layers = {
        "wrong input width": {**good, "hidden_weight_0": np.ones((8, 5), f32)},
        "wrong action count": {
            **good,
            "head_weight": np.ones((3, 8), f32),
            "head_bias": np.zeros(3, f32),
        },
        "a missing bias": {k: v for k, v in good.items() if k != "hidden_bias_0"},
        "an extra array": {**good, "payload": np.zeros(1, f32)},
        "float64 weights": {**good, "head_weight": np.ones((2, 8))},
    }
    for why, arrays in bad_layers.items():
        with pytest.raises(ActorFileError):
            load_actor(arrays, job, *spaces)
            pytest.fail(why)


def _policy_dir(tmp_path: Path) -> tuple[TrainJob, Path]:
    """An evaluation folder with the job, and a policy folder the test fills as a worker would."""
    job = _job("cartpole", "ppo", {})
    work, policy = tmp_path / "eval", tmp_path / "job"
    work.mkdir()
    policy.mkdir()
    job.write(work)
    return job, policy


def test_the_evaluator_reads_the_layers_as_a_worker_file(tmp_path: Path) -> None:
    """The worker wrote `actor.npz`, so it is read as hostile: an archive of plain arrays, no
    link followed, no FIFO opened, size capped. A link to a good archive is refused too (the old
    reader followed it)."""
    job, policy = _policy_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere.npz"
    np.savez(elsewhere, **_good_layers())
    actor = policy / files.ACTOR_FILE
    actor.symlink_to(elsewhere)
    with pytest.raises(WorkerFileError, match="symbolic link"):
        trained_policy(job, tmp_path / "eval", policy)
    actor.unlink()
    os.mkfifo(actor)
    with pytest.raises(WorkerFileError, match="FIFO"):
        trained_policy(job, tmp_path / "eval", policy)
    actor.unlink()
    np.savez(actor, **{**_good_layers(), "head_bias": np.array([object(), object()], dtype=object)})
    with pytest.raises(WorkerFileError, match=r"not a readable \.npz"):
        trained_policy(job, tmp_path / "eval", policy)
    actor.write_bytes(b"not a zip")
    with pytest.raises(WorkerFileError, match=r"not a readable \.npz"):
        trained_policy(job, tmp_path / "eval", policy)
    np.savez(actor, **_good_layers())
    _, act = trained_policy(job, tmp_path / "eval", policy)
    assert act(np.ones((3, 4))).shape == (3,)

    # The observation statistics come from the same folder, under the same rules.
    normalized = dataclasses.replace(job, normalize_obs=True)
    normalized.write(tmp_path / "eval")
    stats = policy / files.OBS_STATS_FILE
    np.savez(elsewhere, mean=np.zeros(4), var=np.ones(4))
    stats.symlink_to(elsewhere)
    with pytest.raises(WorkerFileError, match="symbolic link"):
        trained_policy(normalized, tmp_path / "eval", policy)
    stats.unlink()
    np.savez(stats, mean=np.zeros(4), var=np.ones(4))
    _, act = trained_policy(normalized, tmp_path / "eval", policy)
    assert act(np.ones((3, 4))).shape == (3,)


def test_the_reward_free_programs_start_without_torch() -> None:
    probe = (
        "import sys, rewardsmith.programs.evaluate_sb3, rewardsmith.programs.record_video; "
        "print(sorted(m for m in ('torch', 'stable_baselines3') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stderr
