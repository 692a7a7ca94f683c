"""Build SB3 models from a job, and save/load policies as plain tensors (no pickle on load)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.utils import LinearSchedule

from rewardsmith.job_spec import TrainJob
from rewardsmith.rl.sb3.actor import HEAD_NAMES, hidden_names

ALGORITHMS: dict[str, type[BaseAlgorithm]] = {"ppo": PPO, "sac": SAC}
_ACTIVATIONS = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "elu": torch.nn.ELU}


def _schedule(value: Any) -> Any:
    """rl-zoo style: "lin_0.001" is a learning rate decaying linearly from 0.001 to 0."""
    if isinstance(value, str) and value.startswith("lin_"):
        start = float(value[4:])
        return LinearSchedule(start, 0.0, 1.0)
    return value


class _SpanningSchedule:
    """A schedule of the job's whole run, for a learner that stops early (`TrainJob.stop_at`).

    SB3 passes the progress left of the current `learn` call, which ends at `target` steps; the
    schedule is asked at the progress left of the whole `steps`-long run, so a run continued in
    stages sees the learning rate an uninterrupted one would."""

    def __init__(self, schedule: Any, target: int, steps: int) -> None:
        self.schedule, self.fraction = schedule, target / steps

    def __call__(self, progress_remaining: float) -> Any:
        return self.schedule(1.0 - (1.0 - progress_remaining) * self.fraction)


def algorithm_kwargs(job: TrainJob) -> dict[str, Any]:
    """The job's hyperparameters as SB3 constructor arguments."""
    kwargs = {key: _schedule(value) for key, value in job.hyperparams.items()}
    if job.target_steps != job.steps:
        kwargs = {
            key: _SpanningSchedule(value, job.target_steps, job.steps) if callable(value) else value
            for key, value in kwargs.items()
        }
    policy_kwargs = dict(kwargs.pop("policy_kwargs", {}))
    if "activation_fn" in policy_kwargs:
        policy_kwargs["activation_fn"] = _ACTIVATIONS[policy_kwargs["activation_fn"]]
    if job.algo == "sac":
        policy_kwargs.pop("ortho_init", None)
    kwargs["policy_kwargs"] = policy_kwargs
    return kwargs


def build_model(job: TrainJob, env: Any, verbose: int = 0, **extra: Any) -> BaseAlgorithm:
    """The job's algorithm on `env`; `extra` are constructor arguments of ours (not the job's)."""
    if job.algo not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {job.algo!r}; choose one of {sorted(ALGORITHMS)}")
    return ALGORITHMS[job.algo](
        "MlpPolicy",
        env,
        seed=job.seed,
        verbose=verbose,
        device="cpu",
        **algorithm_kwargs(job),
        **extra,
    )


def save_policy(model: BaseAlgorithm, path: Path) -> None:
    """Save the policy's tensors only (a state dict), so `load_policy` can refuse anything else."""
    torch.save(model.policy.state_dict(), path)


def actor_arrays(model: BaseAlgorithm) -> dict[str, Any] | None:
    """The layers of the policy's deterministic action as float32 arrays (copies), for
    `rl.sb3.actor` to compute it without torch; None for a policy whose action is more than
    dense layers."""
    policy: Any = model.policy
    if isinstance(model, SAC):
        hidden, head = policy.actor.latent_pi, policy.actor.mu
    else:
        hidden, head = policy.mlp_extractor.policy_net, policy.action_net
    linears = [layer for layer in hidden if isinstance(layer, torch.nn.Linear)]
    if not isinstance(head, torch.nn.Linear) or any(lin.bias is None for lin in [*linears, head]):
        return None
    names = [hidden_names(i) for i in range(len(linears))] + [HEAD_NAMES]
    arrays: dict[str, Any] = {}
    for layer, (weight_name, bias_name) in zip([*linears, head], names, strict=True):
        arrays[weight_name] = layer.weight.detach().numpy().copy()
        arrays[bias_name] = layer.bias.detach().numpy().copy()
    return arrays


def save_actor(model: BaseAlgorithm, path: Path) -> None:
    """The actor's layers (`actor_arrays`) for the evaluator and the video program; nothing is
    written for a policy whose action is more than dense layers (they then rebuild the learner)."""
    arrays = actor_arrays(model)
    if arrays is not None:
        np.savez(path, **arrays)


def load_policy(model: BaseAlgorithm, path: Path) -> None:
    """Load weights only: `weights_only=True` refuses any pickled code a candidate might plant."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.policy.load_state_dict(state)


def save_obs_stats(mean: np.ndarray, var: np.ndarray, path: Path, **extra: Any) -> None:
    """The observation statistics the evaluator needs; `extra` arrays let training continue."""
    np.savez(path, mean=mean, var=var, **extra)
