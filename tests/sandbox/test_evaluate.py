"""The evaluator computes the policy in numpy from its exported layers, or builds the learner
without an optimizer, and leaves without the interpreter's teardown; either way it scores the
trained weights as a fully built model does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.jobs.training import evaluate_policy, make_job, train_reward
from rewardsmith.programs.evaluate_sb3 import untrainable
from rewardsmith.rl.sb3.policy_io import build_model, load_policy, save_policy
from rewardsmith.rl.sb3.vec_reward import make_vec_env
from rewardsmith.runs import layout
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

PROBE = """
import sys
from pathlib import Path
from rewardsmith.envs import load_task
from rewardsmith.programs.evaluate_sb3 import untrainable
from rewardsmith.job_spec import TrainJob
from rewardsmith.rl.sb3.policy_io import build_model
from rewardsmith.rl.sb3.vec_reward import make_vec_env

job = TrainJob.read(Path(sys.argv[1]))
build_model(untrainable(job), make_vec_env(load_task(job.task_id), job.n_envs, job.seed))
print("dynamo imported" if "torch._dynamo" in sys.modules else "no dynamo")
"""


@pytest.mark.slow
def test_the_untrainable_policy_acts_as_the_trained_one(tmp_path: Path) -> None:
    adapter = load_task("cartpole")
    job = make_job(adapter, steps=256, seed=3)
    trained = build_model(job, make_vec_env(adapter, job.n_envs, job.seed))
    trained.learn(total_timesteps=256)
    save_policy(trained, tmp_path / files.POLICY_FILE)

    scorer = build_model(untrainable(job), make_vec_env(adapter, job.n_envs, job.seed))
    load_policy(scorer, tmp_path / files.POLICY_FILE)
    obs = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    assert np.array_equal(
        scorer.predict(obs, deterministic=True)[0], trained.predict(obs, deterministic=True)[0]
    )
    assert "optimizer_class" not in job.hyperparams.get("policy_kwargs", {})  # job unchanged

    # In a fresh interpreter (as in the sandbox), building it does not import torch's compiler.
    job.write(tmp_path)
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert probe.stdout.strip() == "no dynamo", probe.stderr


def test_the_evaluator_exits_with_its_code_and_its_output_flushed(tmp_path: Path) -> None:
    """`exit_now` skips the teardown, not the buffered output the orchestrator keeps as the log."""
    code = (
        "from rewardsmith.programs.fast_exit import exit_now; print('written', end=''); exit_now(3)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3 and done.stdout == "written"


@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["cartpole", "pendulum"])
def test_the_numpy_actor_scores_a_trained_policy_as_the_learner_does(
    task_id: str, tmp_path: Path
) -> None:
    """The evaluator computes the exported layers in numpy; a policy folder without them (one
    from before the export) gets the learner rebuilt, and the fitness is the same."""
    adapter = load_task(task_id)
    job = make_job(adapter, steps=2048, seed=5)
    outcome = train_reward(adapter, job, adapter.reward_source("human"), tmp_path, ProcessSandbox())
    assert outcome.ok, outcome.error
    evaluator_log = tmp_path / layout.EVALUATOR_LOG
    assert f"the exported layers ({files.ACTOR_FILE})" in evaluator_log.read_text()

    (tmp_path / layout.JOB_DIR / files.ACTOR_FILE).unlink()
    error, rebuilt = evaluate_policy(adapter, job, tmp_path, ProcessSandbox(), Limits())
    assert error is None
    assert f"the learner rebuilt with {files.POLICY_FILE}" in evaluator_log.read_text()
    assert rebuilt["fitness"] == pytest.approx(outcome.fitness, rel=1e-4, abs=1e-6)
