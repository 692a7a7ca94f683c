"""The training worker end to end: real sandboxed jobs on CartPole with tiny budgets.

Each test runs `train_reward` with the process sandbox, exactly as `rewardsmith train` does, and
checks what lands on disk: the reflection log, the policy, the trusted evaluation and the saved
trajectories; and, for rewards that fail mid-training, the named error at the step it happened
with the log written so far kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rewardsmith import job_spec as files
from rewardsmith.atomic import SCHEMA_VERSION
from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.training import TrainOutcome, make_job, train_reward
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.rl.trajectories import load_episodes
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).parents[2] / "rewardsmith" / "envs" / "examples"
LIMITS = Limits(wall_s=120)
STEPS = 2048  # 8 PPO updates of 8 envs x 32 steps
CHECKPOINTS = 4


def train(
    adapter: TaskAdapter,
    source: str | None,
    out: Path,
    steps: int = STEPS,
    checkpoints: int = CHECKPOINTS,
) -> TrainOutcome:
    job = make_job(adapter, steps=steps, seed=0)
    job.n_checkpoints, job.eval_episodes = checkpoints, 3
    return train_reward(adapter, job, source, out, ProcessSandbox(), LIMITS)


def metrics(out: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in (out / "job" / files.METRICS_FILE).read_text().splitlines()
    ]


def test_cartpole_human_reward_job(tmp_path: Path) -> None:
    adapter = load_task("cartpole")
    outcome = train(adapter, adapter.reward_source("human"), tmp_path)
    assert outcome.ok, f"{outcome.error}\n{(tmp_path / 'worker.log').read_text()[-2000:]}"
    assert outcome.steps >= STEPS

    # The reflection log: about one line per checkpoint, each with the Eureka reflection data.
    records = metrics(tmp_path)
    assert CHECKPOINTS <= len(records) <= CHECKPOINTS + 1
    steps = [r["step"] for r in records]
    assert steps == sorted(steps) and steps[-1] >= STEPS - 256
    for record in records:
        assert {"fitness", "success_rate", "episode_length", "reward_return", "components"} <= set(
            record
        )
        assert set(record["components"]) == {"alive"}
        # CartPole's human reward is +1 per step: the return is the episode length.
        assert record["reward_return"] == pytest.approx(record["episode_length"])
    assert (
        outcome.checkpoints == records and outcome.final_components() == records[-1]["components"]
    )

    # The policy, and the evaluation the separate evaluator wrote (never the worker).
    assert (tmp_path / "job" / files.POLICY_FILE).stat().st_size > 1000
    evaluation = json.loads((tmp_path / "eval" / files.EVAL_FILE).read_text())
    assert evaluation.pop("schema_version") == SCHEMA_VERSION  # a versioned record, as all are
    assert evaluation == outcome.evaluation
    assert outcome.fitness is not None and 8 <= outcome.fitness <= 500
    assert outcome.success_rate is not None and 0.0 <= outcome.success_rate <= 1.0

    # Trajectories: every evaluation episode, with its state fields, actions, fitness and success.
    episodes = load_episodes(tmp_path / "eval" / files.TRAJECTORIES_FILE)
    assert len(episodes) == len(evaluation["fitness_per_episode"])
    for (episode, fitness, success), expected in zip(
        episodes, evaluation["fitness_per_episode"], strict=True
    ):
        assert fitness == expected == adapter.fitness(episode)
        assert success == adapter.success(episode)
        assert set(episode.states) == set(adapter.schema.names)
        assert all(len(values) == episode.length + 1 for values in episode.states.values())
        assert episode.actions.shape == (episode.length,)
    assert np.mean([f for _e, f, _s in episodes]) == pytest.approx(outcome.fitness)


# CartPole's PPO rollouts are 32 steps x 8 envs: the reward process calls the reward once on all
# 256 transitions of a rollout, and again row by row where that call fails (to name the step).
ROLLOUT = 256
RAISES_AFTER = """import numpy as np

_seen = [0]  # breaks the no-globals rule on purpose: a reward that fails mid-training


def compute_reward(state, action, next_state):
    _seen[0] += len(action) if len(action) == {rollout} else 0
    if _seen[0] > {limit}:
        raise ValueError("reward blew up after {limit} transitions")
    alive = np.ones(len(action))
    return alive, {{"alive": alive}}
"""


def test_reward_that_raises_mid_training(tmp_path: Path) -> None:
    """BAD_REWARDS 13: runtime_error at the step it raised; the log and the policy so far kept."""
    adapter = load_task("cartpole")
    # Counts training transitions only (checkpoint evaluations call it on whole episodes).
    source = RAISES_AFTER.format(limit=1500, rollout=ROLLOUT)
    outcome = train(adapter, source, tmp_path, steps=4096)
    assert outcome.error is not None and not outcome.ok
    error = outcome.error
    assert error.category == ErrorCategory.RUNTIME_ERROR, str(error)
    assert "reward blew up after 1500 transitions" in error.message
    # The rollout whose one call crossed 1500 fails whole: its first step is the error's.
    assert error.step is not None and 1500 - ROLLOUT < error.step <= 1500
    assert (
        error.traceback is not None
        and "reward.py" in error.traceback
        and "line 9" in error.traceback
    )
    assert "site-packages" not in error.traceback and "rewardsmith/" not in error.traceback
    records = metrics(tmp_path)
    assert len(records) >= 1 and all(r["step"] < error.step for r in records)
    assert outcome.checkpoints == records
    assert (tmp_path / "job" / files.POLICY_FILE).exists()
    assert outcome.evaluation == {} and not (tmp_path / "eval" / files.EVAL_FILE).exists()


NAN_IN_RARE_STATES = """import numpy as np


def compute_reward(state, action, next_state):
    alive = np.ones(len(action))
    # NaN only far out on the track: random early play falls over long before it gets there.
    far = np.abs(next_state.cart_position) > 1.5
    edge_penalty = np.where(far, np.nan, 0.0)
    return alive + edge_penalty, {"alive": alive, "edge_penalty": edge_penalty}
"""


def test_reward_that_returns_nan_in_rare_states(tmp_path: Path) -> None:
    """BAD_REWARDS 14: nonfinite_reward naming the component and the step; training stops."""
    adapter = load_task("cartpole")
    # Checkpoints every 3,000 steps; with seed 0 the cart first gets that far at ~3,800 steps.
    outcome = train(adapter, NAN_IN_RARE_STATES, tmp_path, steps=30_000, checkpoints=10)
    assert outcome.error is not None, "the NaN state was never reached"
    error = outcome.error
    assert error.category == ErrorCategory.NONFINITE_REWARD, str(error)
    assert error.component == "edge_penalty" and "'edge_penalty'" in error.message
    assert error.step is not None and 3_000 < error.step < 30_000
    assert outcome.steps == 0 and outcome.evaluation == {}
    records = metrics(tmp_path)
    assert records and all(r["step"] < error.step for r in records)


def test_task_file_job(tmp_path: Path) -> None:
    """A user task file end to end: copied into the job, reloaded by the worker and evaluator."""
    adapter = load_task(task_file=EXAMPLES / "cartpole_task.toml")
    outcome = train(
        adapter, adapter.reward_source("human"), tmp_path / "human", steps=1024
    )  # env's reward
    assert outcome.ok, f"{outcome.error}\n{(tmp_path / 'human' / 'worker.log').read_text()[-2000:]}"
    assert (tmp_path / "human" / "job" / files.TASK_FILE).read_text() == (
        EXAMPLES / "cartpole_task.toml"
    ).read_text()
    assert outcome.checkpoints[-1]["components"] == {
        "env_reward": outcome.checkpoints[-1]["reward_return"]
    }
    assert outcome.fitness is not None and outcome.fitness >= 8
    episodes = load_episodes(tmp_path / "human" / "eval" / files.TRAJECTORIES_FILE)
    assert set(episodes[0][0].states) == set(adapter.schema.names)
