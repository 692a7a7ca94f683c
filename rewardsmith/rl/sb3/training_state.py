"""What a worker saves so that a later job can continue its training (multi-fidelity rungs).

A continued learner must be the one that stopped, not a fresh one warm-started from weights:
the policy, the optimiser's moments, the observation normalisation statistics and the return
scaling statistics all carry over, and so does the step count (learning-rate schedules and the
reflection checkpoints follow it). Everything is stored as tensors and arrays and loaded without
pickle (`weights_only=True`, `allow_pickle=False`): the files come back from a sandbox.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecNormalize

from rewardsmith import job_spec as files
from rewardsmith.rl.sb3.policy_io import load_policy, save_obs_stats, save_policy


def _return_stats(env: Any, scaler: Any) -> RunningMeanStd | None:
    """The running return statistics rewards are scaled by: the deferred-reward scaler's, or
    VecNormalize's when it scales rewards itself."""
    if scaler is not None:
        stats: RunningMeanStd = scaler.ret_rms
        return stats
    if isinstance(env, VecNormalize) and env.norm_reward:
        return env.ret_rms
    return None


def save_training_state(model: BaseAlgorithm, env: Any, scaler: Any, job_dir: Path) -> None:
    """The policy, its optimiser and the normalisation statistics, into `job_dir`."""
    save_policy(model, job_dir / files.POLICY_FILE)
    optimizer = getattr(model.policy, "optimizer", None)  # SAC's are the actor's and critic's
    if optimizer is not None:
        torch.save(optimizer.state_dict(), job_dir / files.OPTIMIZER_FILE)
    if isinstance(env, VecNormalize):
        obs: Any = env.obs_rms  # one RunningMeanStd for Box observations
        returns = _return_stats(env, scaler)
        extra = {}
        if returns is not None:
            extra = {"ret_mean": returns.mean, "ret_var": returns.var, "ret_count": returns.count}
        save_obs_stats(obs.mean, obs.var, job_dir / files.OBS_STATS_FILE, count=obs.count, **extra)


def restore_training_state(
    model: BaseAlgorithm, env: Any, scaler: Any, job_dir: Path, steps: int
) -> None:
    """Put back what `save_training_state` saved (as `resume_*` inputs) into a fresh learner."""
    load_policy(model, job_dir / f"{files.RESUME_PREFIX}{files.POLICY_FILE}")
    optimizer = torch.load(
        job_dir / f"{files.RESUME_PREFIX}{files.OPTIMIZER_FILE}",
        map_location="cpu",
        weights_only=True,
    )
    model.policy.optimizer.load_state_dict(optimizer)
    model.num_timesteps = steps
    stats_path = job_dir / f"{files.RESUME_PREFIX}{files.OBS_STATS_FILE}"
    if isinstance(env, VecNormalize):
        obs: Any = env.obs_rms
        with np.load(stats_path, allow_pickle=False) as stats:
            obs.mean, obs.var, obs.count = stats["mean"], stats["var"], float(stats["count"])
            returns = _return_stats(env, scaler)
            if returns is not None and "ret_mean" in stats:
                returns.mean, returns.var = stats["ret_mean"], stats["ret_var"]
                returns.count = float(stats["ret_count"])
