"""The evaluator: score a trained policy on the task's fitness, without any candidate reward code.

Runs as `python -m rewardsmith.programs.evaluate_sb3 EVAL_DIR POLICY_DIR`, after the training worker has
exited. It reads its job from EVAL_DIR (written by the orchestrator, out of the worker's reach),
loads only arrays from POLICY_DIR (`allow_pickle=False`; or tensors, `weights_only`, no pickle),
and writes the fitness that selects candidates, plus the evaluation trajectories, to EVAL_DIR.

The policy's deterministic action is computed in numpy from the layers the worker exported
(`rl.sb3.actor`), so this program never imports torch; a policy numpy does not cover, or a
policy folder from before the export, rebuilds the learner instead (`learner_policy`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from pathlib import Path
from typing import Any

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.rl.rollout import Policy, rollout_episodes, write_evaluation
from rewardsmith.rl.sb3.actor import actor_kind, load_actor, obs_normalizer
from rewardsmith.sandbox.worker_files import MissingWorkerFile, read_npz

FINAL_EVAL_SEED = 20_000
# The exported layers and the observation statistics are read as any worker file (no link, no
# FIFO, capped): a network of a few thousand units a layer fits; SB3's largest here (256 x 256,
# SAC's) is 0.3 MB.
ACTOR_CAP = 64 * 1024 * 1024


class _NoOptimizer:
    """Stands in for the policy's optimizer: the evaluator never trains, and building one of
    torch's optimizers imports torch's compiler stack (measured ~1.4 s on two cores, and more to
    tear down). SAC's entropy coefficient still gets its own optimizer; PPO builds none."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def untrainable(job: TrainJob) -> TrainJob:
    """The job with `_NoOptimizer` as the policy's optimizer; everything else as trained."""
    hyperparams = dict(job.hyperparams)
    policy_kwargs = dict(hyperparams.get("policy_kwargs", {}))
    policy_kwargs["optimizer_class"] = _NoOptimizer
    hyperparams["policy_kwargs"] = policy_kwargs
    return dataclasses.replace(job, hyperparams=hyperparams)


def trained_policy(job: TrainJob, work_dir: Path, policy_dir: Path) -> tuple[TaskAdapter, Policy]:
    """The task and the trained policy (deterministic actions on batches of raw observations):
    its structure from the trusted job in `work_dir`, only its numbers from `policy_dir`."""
    adapter = load_task(job.task_id, work_dir / files.TASK_FILE if job.uses_task_file else None)
    env = adapter.make_env()
    observation_space, action_space = env.observation_space, env.action_space
    env.close()
    arrays = None
    if actor_kind(job, observation_space, action_space):
        with contextlib.suppress(MissingWorkerFile):  # a folder from before the export
            arrays = read_npz(policy_dir, files.ACTOR_FILE, ACTOR_CAP, ACTOR_CAP)
    if arrays is not None:
        act = load_actor(arrays, job, observation_space, action_space)
        print(f"policy: the exported layers ({files.ACTOR_FILE}), in numpy", file=sys.stderr)
    else:
        act = learner_policy(job, adapter, policy_dir)
        print(f"policy: the learner rebuilt with {files.POLICY_FILE}", file=sys.stderr)
    if not job.normalize_obs:
        return adapter, act
    stats = read_npz(policy_dir, files.OBS_STATS_FILE, ACTOR_CAP, ACTOR_CAP)
    normalize = obs_normalizer(stats)
    return adapter, lambda obs: act(normalize(obs))


def learner_policy(job: TrainJob, adapter: TaskAdapter, policy_dir: Path) -> Policy:
    """The deterministic policy of the learner rebuilt with SB3 and the worker's tensors."""
    import rewardsmith.programs.no_tracing  # before torch is imported

    # isort: split
    import rewardsmith.programs.no_dynamo  # before torch builds an optimizer
    import rewardsmith.programs.no_tensorboard  # noqa: F401  (before SB3 is imported)

    # isort: split
    import torch

    from rewardsmith.rl.sb3.policy_io import build_model, load_policy
    from rewardsmith.rl.sb3.vec_reward import make_vec_env

    torch.set_num_threads(job.torch_threads)
    model = build_model(untrainable(job), make_vec_env(adapter, job.n_envs, job.seed))
    load_policy(model, policy_dir / files.POLICY_FILE)
    return lambda obs: model.predict(obs, deterministic=True)[0]


def main(eval_dir: Path, policy_dir: Path) -> int:
    """Rebuild the model from the trusted job, load only the worker's weights, write the fitness."""
    job = TrainJob.read(eval_dir)
    adapter, policy = trained_policy(job, eval_dir, policy_dir)
    episodes = rollout_episodes(adapter, policy, job.eval_episodes * 2, FINAL_EVAL_SEED + job.seed)
    write_evaluation(adapter, episodes, eval_dir)
    return 0


if __name__ == "__main__":
    from rewardsmith.programs.fast_exit import exit_now

    exit_now(main(Path(sys.argv[1]), Path(sys.argv[2])))  # everything is written: skip teardown
