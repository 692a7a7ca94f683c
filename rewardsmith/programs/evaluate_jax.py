"""The JAX evaluator: score saved policy parameters on the task's fitness, with no reward code.

Runs as `python -m rewardsmith.programs.evaluate_jax EVAL_DIR POLICY_DIR [CACHE_STORE]` after the
worker has exited. The network is rebuilt from the orchestrator's job file in EVAL_DIR; only the
parameter arrays come from POLICY_DIR (`allow_pickle=False`, checked against the network's
template). The episodes are scored by the task's own adapter, as on the SB3 backend. With a
store (read-only), compiled programs are reused and new ones left for the orchestrator to keep
(`rewardsmith.rl.jax.compile_cache`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from rewardsmith.envs import load_task
from rewardsmith.job_spec import TrainJob
from rewardsmith.rl.jax import prepare_process
from rewardsmith.rl.jax.compile_cache import use as use_compile_cache
from rewardsmith.rl.rollout import write_evaluation

FINAL_EVAL_SEED = 20_000


def main(eval_dir: Path, policy_dir: Path, store: Path | None = None) -> int:
    """Rebuild the network from the trusted job, load only the parameter arrays, write fitness."""
    prepare_process()
    import jax

    if store is not None:
        use_compile_cache(store, eval_dir)

    from rewardsmith.rl.jax.policy import PARAMS_FILE, config_from_job, load_params, make_policy_fn
    from rewardsmith.rl.jax.rollout import PolicyRollout
    from rewardsmith.rl.jax.tasks import jax_task

    job = TrainJob.read(eval_dir)
    adapter = load_task(job.task_id)
    task = jax_task(job.task_id)
    env = task.make_batch_env()
    make_policy, template = make_policy_fn(
        config_from_job(job.hyperparams), env.observation_size, env.action_size
    )
    params = load_params(policy_dir / PARAMS_FILE, template)
    rollout = PolicyRollout(env, job.eval_episodes * 2, make_policy)
    episodes, _ = rollout(params, jax.random.PRNGKey(FINAL_EVAL_SEED + job.seed))
    write_evaluation(adapter, episodes, eval_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(*map(Path, sys.argv[1:4])))
