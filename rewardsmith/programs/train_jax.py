"""The JAX training worker: train Brax PPO on a JAX task with a traced reward, log, write the result.

Runs inside the sandbox as `python -m rewardsmith.programs.train_jax JOB_DIR`. Trusted code only:
the candidate's Python never runs here. Its reward arrives as `reward.jaxexport`, serialised
StableHLO made by the sandboxed tracer (`rewardsmith.programs.trace_jax`), which this worker
deserialises, checks (no host callbacks, no custom calls, the contract's inputs and outputs) and
compiles into the training step. It writes what the SB3 worker writes, in the same formats:
`metrics.jsonl` (about ten checkpoints: per-component episode sums, fitness, success, length),
`progress.json`, `result.json`, and the policy as parameters (`policy_params.npz`). The fitness
that selects candidates comes from the reward-free evaluator (`rewardsmith.programs.evaluate_jax`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith import job_spec as files
from rewardsmith.atomic import write_record
from rewardsmith.envs import load_task
from rewardsmith.job_spec import TrainJob
from rewardsmith.reward.errors import RewardError
from rewardsmith.rl.jax import prepare_process
from rewardsmith.rl.rollout import summarize

EXPORT_FILE = "reward.jaxexport"
EVAL_SEED_OFFSET = 10_000


def checkpoint_count(job: TrainJob, steps_per_update: int) -> int:
    """Brax evaluates after equal numbers of PPO updates: at most one checkpoint per update."""
    return max(1, min(job.n_checkpoints, job.steps // steps_per_update))


def main(job_dir: Path) -> int:
    """Train the job in JOB_DIR and write its records; a refused export is an error result."""
    prepare_process()
    import jax
    from brax.training.agents.ppo import train as ppo

    from rewardsmith.programs.jax_export import Signature, call_export, load_reward_export
    from rewardsmith.rl.jax import compat
    from rewardsmith.rl.jax.env import ContractReward, wrap_batched
    from rewardsmith.rl.jax.policy import PARAMS_FILE, config_from_job, network_factory, save_params
    from rewardsmith.rl.jax.rollout import PolicyRollout
    from rewardsmith.rl.jax.tasks import jax_task

    compat.install()
    job = TrainJob.read(job_dir)
    adapter = load_task(job.task_id)
    task = jax_task(job.task_id)
    config = config_from_job(job.hyperparams)
    env = task.make_batch_env()
    result: dict[str, Any] = {"status": "ok", "reward_confinement": ["traced in the sandbox"]}
    try:
        reward = None
        if not job.env_reward:
            signature = Signature.for_task(adapter, task.discrete, task.policy_action_size)
            exported, _ = load_reward_export((job_dir / EXPORT_FILE).read_bytes(), signature)

            def reward(state: Any, action: Any, next_state: Any) -> Any:
                return call_export(exported, signature.fields, state, action, next_state)

        train_env = ContractReward(env, reward) if reward is not None else env
        n_checkpoints = checkpoint_count(job, config.steps_per_update)
        # The reflection: evaluation episodes of the deterministic policy, components summed.
        rollouts: dict[str, PolicyRollout] = {}
        final: dict[str, Any] = {}  # the last checkpoint's parameters, saved as the policy
        began = time.monotonic()

        def on_params(step: int, make_policy: Any, params: Any) -> None:
            if step == 0:
                return
            if "eval" not in rollouts:
                rollouts["eval"] = PolicyRollout(env, job.eval_episodes, make_policy, reward)
            key = jax.random.PRNGKey(job.seed + EVAL_SEED_OFFSET)
            episodes, sums = rollouts["eval"](params, key)
            record: dict[str, Any] = {"step": int(step), **summarize(adapter, episodes)}
            if sums is not None:
                means = {name: float(np.mean([s[name] for s in sums])) for name in sums[0]}
                record["reward_return"] = means.pop("__total__")
                record["components"] = means
            else:
                record["reward_return"] = float(np.mean([e.env_rewards.sum() for e in episodes]))
                record["components"] = {"env_reward": record["reward_return"]}
            record["wall_s"] = time.monotonic() - began
            with (job_dir / files.METRICS_FILE).open("a") as log:
                log.write(json.dumps(record) + "\n")
            write_record(job_dir / files.PROGRESS_FILE, {"steps": int(step), "total": job.steps})
            final["params"], final["step"] = params, int(step)

        ppo.train(
            environment=train_env,
            num_timesteps=job.steps,
            episode_length=task.episode_length,
            wrap_env_fn=wrap_batched,
            num_evals=n_checkpoints + 1,
            run_evals=False,
            num_eval_envs=1,
            seed=job.seed,
            network_factory=network_factory(config),
            policy_params_fn=on_params,
            **config.train_kwargs(),
        )
        save_params(final["params"], job_dir / PARAMS_FILE)
        result["steps"] = final["step"]
    except RewardError as error:
        result = {"status": "error", **error.to_dict()}
    write_record(job_dir / files.RESULT_FILE, result)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
