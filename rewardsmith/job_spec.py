"""What the orchestrator hands each sandboxed program and reads back: the file names, and the
training job's spec (`TrainJob`). Both sides import it; it imports no reward or RL code."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.atomic import SCHEMA_VERSION, record_body, to_json, write_text

JOB_FILE = "job.json"
REWARD_FILE = "reward.py"
TASK_FILE = "task.toml"
METRICS_FILE = "metrics.jsonl"
PROGRESS_FILE = "progress.json"
RESULT_FILE = "result.json"
POLICY_FILE = "policy.pt"
ACTOR_FILE = "actor.npz"  # the policy's deterministic-action layers, for the torch-free programs
OBS_STATS_FILE = "obs_stats.npz"  # normalisation statistics (observations, and returns)
OPTIMIZER_FILE = "optimizer.pt"
TRAINING_STATE_FILES = (POLICY_FILE, OPTIMIZER_FILE, OBS_STATS_FILE)
"""What a job leaves behind to be continued from (`TrainJob.start_steps`)."""
CONTINUABLE_ALGOS = ("ppo",)
"""Learners a job can continue: on-policy ones keep nothing else (SAC's replay buffer would
have to travel too)."""
PPO_DEFAULT_N_STEPS = 2048  # Stable-Baselines3's, for a task that does not set its own
RESUME_PREFIX = "resume_"  # the inputs a continued job starts from: resume_policy.pt, ...
EVAL_FILE = "evaluation.json"
TRAJECTORIES_FILE = "trajectories.npz"
# The check programs (smoke test, bank scoring, JAX trace): reward.py plus one input each.
STATES_FILE = "states.npz"  # recorded random-policy transitions (smoke test, JAX trace)
BANK_FILE = "bank.npz"  # the trajectory bank the preference check scores
SMOKE_RESULT_FILE = "smoke.json"
SCORE_RESULT_FILE = "score.json"
TRACE_RESULT_FILE = "trace.json"
EXPORT_FILE = "reward.jaxexport"  # the traced reward (serialised StableHLO)
EXPORT_CAP = 16 * 1024 * 1024  # bytes of an export either side accepts
VIDEO_FILE = "rollout.mp4"  # one rendered episode of a trained policy (the video program)
VIDEO_RESULT_FILE = "video.json"  # its frame count, or why there is no video
KEYFRAMES_FILE = "keyframes.npz"  # evenly spaced stills of that episode (`frames`, `seconds`)
TENSORBOARD_DIR = "tensorboard"  # the SB3 learner's TensorBoard log, where tensorboard is installed


@dataclass
class TrainJob:
    """Everything a worker needs; written by the orchestrator, read inside the sandbox."""

    task_id: str
    algo: str
    steps: int
    seed: int
    n_envs: int
    normalize_obs: bool
    hyperparams: dict[str, Any] = field(default_factory=dict)
    n_checkpoints: int = 10
    eval_episodes: int = 5
    uses_task_file: bool = False
    env_reward: bool = False  # train on the environment's own reward (task files without one)
    torch_threads: int = 1
    backend: str = "sb3"  # "jax": traced reward, Brax PPO (rewardsmith.rl.jax)
    # Multi-fidelity training: stop after `stop_at` of a `steps`-long run (learning-rate
    # schedules still span `steps`), and continue from a saved state taken at `start_steps`.
    stop_at: int | None = None
    start_steps: int = 0

    @property
    def target_steps(self) -> int:
        """Where this job stops training."""
        return self.steps if self.stop_at is None else min(self.stop_at, self.steps)

    @property
    def rollout_steps(self) -> int:
        """The steps one update collects: an on-policy learner stops only after whole ones."""
        if self.algo != "ppo":
            return 1
        return int(self.hyperparams.get("n_steps", PPO_DEFAULT_N_STEPS)) * self.n_envs

    def to_json(self) -> str:
        """The job file's text: a versioned record, as every JSON file of a run."""
        return to_json({"schema_version": SCHEMA_VERSION, **asdict(self)}, indent=2)

    def write(self, job_dir: Path) -> None:
        """Write the job file atomically (a link at its name is replaced, never followed)."""
        write_text(job_dir / JOB_FILE, self.to_json())

    @classmethod
    def read(cls, job_dir: Path) -> TrainJob:
        """The job in `job_dir`; refuses (`RecordVersionError`) a job file of an unknown layout."""
        return cls(**record_body(json.loads((job_dir / JOB_FILE).read_text())))
