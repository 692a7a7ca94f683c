"""The training worker: read a job, train a policy on the candidate reward, log, write the result.

Runs inside the sandbox as `python -m rewardsmith.programs.train_sb3 JOB_DIR`. It is the learner:
trusted code only. The candidate reward runs in a child process of its own, confined further
(`rewardsmith.rl.reward_process`), which cannot reach this process's memory or the job
directory; only this process writes the weights, metrics and result. Read top to bottom: config,
environments, model, reflection callback, training loop, result. Nothing it writes decides the
candidate's fitness: the separate evaluator (`rewardsmith.programs.evaluate_sb3`) does that.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import rewardsmith.programs.no_tracing  # before torch is imported

# isort: split
import torch

import rewardsmith.programs.no_remote_logging  # before SB3 imports TensorBoard

# isort: split
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize
from typing_extensions import override

import rewardsmith.programs.no_dynamo  # noqa: F401  (before torch builds an optimizer)
from rewardsmith import job_spec as files
from rewardsmith.atomic import write_record
from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import Episode, TaskAdapter
from rewardsmith.envs.schema import StateBatch
from rewardsmith.job_spec import TrainJob
from rewardsmith.reward.errors import RewardError
from rewardsmith.rl.reward_process import RewardProcess, RewardProcessDied
from rewardsmith.rl.rollout import Policy, rollout_episodes, summarize
from rewardsmith.rl.sb3.actor import actor_kind, load_actor
from rewardsmith.rl.sb3.deferred_rewards import deferred_ppo_kwargs
from rewardsmith.rl.sb3.policy_io import actor_arrays, build_model, save_actor
from rewardsmith.rl.sb3.training_state import restore_training_state, save_training_state
from rewardsmith.rl.sb3.vec_reward import BatchReward, ContractRewardVecEnv, make_vec_env

EVAL_SEED_OFFSET = 10_000
_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def tensorboard_dir(job_dir: Path) -> str | None:
    """Where SB3 writes the TensorBoard log (its own losses, plus each checkpoint's fitness and
    reward components), or None where the `tensorboard` package is not installed."""
    if importlib.util.find_spec("tensorboard") is None:
        return None
    return str(job_dir / files.TENSORBOARD_DIR)


def tensorboard_tag(name: str) -> str:
    """A reward component's name (the candidate's words) as a plain TensorBoard tag."""
    return "reward_terms/" + _TAG_UNSAFE.sub("_", name)[:64]


def episode_components(reward: BatchReward, episode: Episode, step: int) -> dict[str, float]:
    """Sum each reward component (and the total) over one episode, calling the reward once, batched."""
    state = StateBatch({name: values[:-1] for name, values in episode.states.items()})
    next_state = StateBatch({name: values[1:] for name, values in episode.states.items()})
    total, components = reward(state, episode.actions, next_state, step)
    sums = {name: float(values.sum()) for name, values in components.items()}
    sums["__total__"] = float(total.sum())
    return sums


class ReflectionCallback(BaseCallback):
    """At ~N checkpoints, evaluate the policy and log components, fitness, success and length."""

    def __init__(
        self,
        adapter: TaskAdapter,
        job: TrainJob,
        job_dir: Path,
        reward: BatchReward | None,
    ) -> None:
        super().__init__()
        self.adapter, self.job, self.job_dir = adapter, job, job_dir
        self.reward = reward
        self.every = max(job.steps // job.n_checkpoints, 1)
        # A continued job keeps the checkpoint grid of the whole run.
        self.next_checkpoint = (job.start_steps // self.every + 1) * self.every
        self.last_checkpoint_step = -1
        self.last_progress = 0.0

    def policy(self) -> Policy:
        """The deterministic policy as it stands, on raw observations (normalised as the learner
        sees them): in numpy where `rl.sb3.actor` covers it, as the evaluator computes it, since
        SB3's `predict` costs ~0.3 ms a call, most of a tiny training's checkpoints."""
        spaces = (self.model.observation_space, self.model.action_space)
        arrays = actor_arrays(self.model) if actor_kind(self.job, *spaces) else None
        if arrays is not None:
            act = load_actor(arrays, self.job, *spaces)
        else:
            model = self.model
            act = lambda obs: np.asarray(model.predict(obs, deterministic=True)[0])  # noqa: E731
        env = self.model.get_env()
        if isinstance(env, VecNormalize):
            return lambda obs: act(np.asarray(env.normalize_obs(obs)))
        return act

    def checkpoint(self) -> None:
        """Evaluate on fresh seeded episodes and append one checkpoint to `metrics.jsonl`."""
        self.last_checkpoint_step = self.num_timesteps
        episodes = rollout_episodes(
            self.adapter, self.policy(), self.job.eval_episodes, self.job.seed + EVAL_SEED_OFFSET
        )
        record = {"step": self.num_timesteps, **summarize(self.adapter, episodes)}
        if self.reward is not None:
            per_episode = [episode_components(self.reward, e, self.num_timesteps) for e in episodes]
            means = {
                name: float(np.mean([c[name] for c in per_episode])) for name in per_episode[0]
            }
            record["reward_return"] = means.pop("__total__")
            record["components"] = means
        else:
            record["reward_return"] = float(np.mean([e.env_rewards.sum() for e in episodes]))
            record["components"] = {"env_reward": record["reward_return"]}
        with (self.job_dir / files.METRICS_FILE).open("a") as log:
            log.write(json.dumps(record) + "\n")
        self.log_to_tensorboard(record)

    def log_to_tensorboard(self, record: dict[str, Any]) -> None:
        """The checkpoint beside SB3's own curves (a no-op where no TensorBoard log is kept)."""
        for key in ("fitness", "success_rate", "episode_length"):
            if record[key] is not None:
                self.logger.record(f"eval/{key}", record[key])
        self.logger.record("reward/total", record["reward_return"])
        for name, value in record["components"].items():
            self.logger.record(tensorboard_tag(name), value)
        self.logger.dump(self.num_timesteps)

    @override
    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_checkpoint:
            self.next_checkpoint += self.every
            self.checkpoint()
        now = time.monotonic()
        if now - self.last_progress > 0.5:
            self.last_progress = now
            write_record(
                self.job_dir / files.PROGRESS_FILE,
                {"steps": self.num_timesteps, "total": self.job.target_steps},
            )
        return True


def main(job_dir: Path) -> int:
    """Train on the job; a reward error is written to `result.json` and still exits 0.

    Where the reward process died, no result is written and the worker exits as it did (128 +
    signal), so the orchestrator classifies the death as it would have in one process.
    """
    job = TrainJob.read(job_dir)
    torch.set_num_threads(job.torch_threads)
    task_file = job_dir / files.TASK_FILE if job.uses_task_file else None
    adapter = load_task(job.task_id, task_file)
    reward_path = job_dir / files.REWARD_FILE
    result: dict[str, Any] = {"status": "ok"}
    with contextlib.ExitStack() as cleanup:
        try:
            reward: RewardProcess | None = None
            if not job.env_reward:
                # The reward's code runs only in its own process, from here on.
                reward = cleanup.enter_context(
                    RewardProcess(reward_path.read_text(), str(reward_path), adapter.schema.names)
                )
                # Reported by the reward process before it loaded the reward: not the reward's say.
                result["reward_confinement"] = reward.mechanisms
            # Environments with the candidate reward applied through a wrapper. PPO takes the
            # rewards of a whole rollout at once (one exchange with the reward process). A
            # continued job draws fresh episodes and actions (seeded by where it starts).
            learner_seed = job.seed + job.start_steps
            env: Any = make_vec_env(adapter, job.n_envs, learner_seed)
            gamma = job.hyperparams.get("gamma", 0.99)
            deferred: dict[str, Any] = {}
            if reward is not None:
                env = ContractRewardVecEnv(env, reward, defer=job.algo == "ppo")
                if job.algo == "ppo":
                    deferred = deferred_ppo_kwargs(env, job.n_envs, gamma, job.normalize_obs)
            if job.normalize_obs:
                env = VecNormalize(env, gamma=gamma, norm_reward=not deferred)
            # The learner, and the callback that records the reflection data.
            model = build_model(
                replace(job, seed=learner_seed),
                env,
                tensorboard_log=tensorboard_dir(job_dir),
                **deferred,
            )
            scaler = deferred.get("rollout_buffer_kwargs", {}).get("scaler")
            if job.start_steps:
                restore_training_state(model, env, scaler, job_dir, job.start_steps)
            callback = ReflectionCallback(adapter, job, job_dir, reward)
            try:
                model.learn(
                    total_timesteps=job.target_steps - job.start_steps,
                    callback=callback,
                    reset_num_timesteps=not job.start_steps,
                )
                if model.num_timesteps - callback.last_checkpoint_step >= callback.every // 2:
                    callback.checkpoint()
            finally:
                # Keep what was learned so far, even when the reward failed mid-training.
                save_training_state(model, env, scaler, job_dir)
                save_actor(model, job_dir / files.ACTOR_FILE)
            result["steps"] = model.num_timesteps
        except RewardError as error:
            result = {"status": "error", **error.to_dict()}
        except RewardProcessDied as died:
            # Die as the reward did, so the orchestrator names it as it would in one process.
            print(f"worker: {died}", file=sys.stderr, flush=True)
            return died.exit_code
    write_record(job_dir / files.RESULT_FILE, result)
    return 0


if __name__ == "__main__":
    from rewardsmith.programs.fast_exit import exit_now

    exit_now(main(Path(sys.argv[1])))  # everything is written and closed: skip teardown
