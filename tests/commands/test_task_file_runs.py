"""`run --task-file` end to end for a user's own task, and a run working from its own copy.

Three tasks, written in tmp_path as a user would: one with human and sparse reward files (in a
sub-folder), one with only a sparse file, one with neither. Each run is stopped at its final
evaluation as by Ctrl-C; the task's folder is then deleted, and `resume`, `evaluate` and
`replay --rerun` must all work from what the run folder kept.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.eureka_loop import evaluation
from rewardsmith.eureka_loop.baseline import is_env_reward
from rewardsmith.runs.store import RunStore
from tests.eureka_loop.rewards import SYNTAX_ERROR

ROOT = Path(__file__).resolve().parents[2] / "rewardsmith" / "envs"
runner = CliRunner()

CARTPOLE = """
env_id = "CartPole-v1"
goal = "Balance the pole upright on the cart for as long as possible (500 steps at most)."
{rewards}
[fields.cart_position]
index = 0
description = "cart position on the track; the track ends at +-2.4"
units = "m"
[fields.pole_angle]
index = 2
description = "pole angle from upright; the episode fails beyond +-0.2094"
units = "rad"
[fields.pole_angular_velocity]
index = 3
description = "pole angular velocity"
units = "rad/s"
[fitness]
kind = "episode_length"
[success]
kind = "truncated"
[training]
n_envs = 4
eval_episodes = 2
[training.hyperparams]
n_steps = 64
batch_size = 128
"""
PENDULUM = """
env_id = "Pendulum-v1"
goal = "Swing the pendulum up and keep it upright with little torque."
sparse_reward = "sparse.py"
[fields.cos_angle]
index = 0
description = "cosine of the angle from upright; 1 is upright"
[fields.angular_velocity]
index = 2
description = "angular velocity, limited to +-8"
units = "rad/s"
[fitness]
kind = "mean"
field = "cos_angle"
[success]
kind = "fitness_at_least"
threshold = 0.9
[training]
n_envs = 2
eval_episodes = 2
[training.hyperparams]
n_steps = 256
batch_size = 128
"""
PENDULUM_SPARSE = """import numpy as np


def compute_reward(state, action, next_state):
    upright = (next_state.cos_angle > 0.98).astype(np.float64)
    return upright, {"upright": upright}
"""


def _write_task(case: str, folder: Path) -> Path:
    """A task folder as a user keeps it; returns the task file's path."""
    folder.mkdir(parents=True)
    if case == "sparse_only":
        (folder / "sparse.py").write_text(PENDULUM_SPARSE)
        text = PENDULUM
    elif case == "human_and_sparse":
        (folder / "rewards").mkdir()
        shutil.copy(ROOT / "rewards" / "cartpole_human.py", folder / "rewards" / "human.py")
        shutil.copy(ROOT / "examples" / "cartpole_sparse.py", folder / "rewards" / "sparse.py")
        names = 'human_reward = "rewards/human.py"\nsparse_reward = "rewards/sparse.py"'
        text = CARTPOLE.replace("{rewards}", names)
    else:
        text = CARTPOLE.replace("{rewards}", "")
    path = folder / "task.toml"
    path.write_text(text)
    return path


def _invoke(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "samples"),
    # One candidate each where round 0 starts from a reward file or the environment's reward;
    # two without any, to train the task file's own terms beside the environment's reward.
    [("human_and_sparse", 1), ("sparse_only", 1), ("neither", 2)],
)
def test_a_task_file_run_resumes_evaluates_and_reruns_from_its_own_copy(
    case: str, samples: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = _write_task(case, tmp_path / "mine")
    runs = str(tmp_path / "runs")
    with monkeypatch.context() as patch:  # Ctrl-C as the final evaluation starts
        patch.setattr(evaluation, "evaluate_best", _interrupt)
        stopped = runner.invoke(
            app,
            ["run", "--task-file", str(task), "--rounds", "1", "--samples", str(samples), "--steps",
             "1000", "--eval-seeds", "1", "--parallel", "2", "--sandbox", "process",
             "--runs-dir", runs, "--json"],
        )  # fmt: skip
    assert stopped.exit_code == 130, stopped.output
    shutil.rmtree(tmp_path / "mine")
    [summary] = RunStore(Path(runs)).list_runs()
    run_id = summary.run_id

    resumed = _invoke("resume", run_id, "--runs-dir", runs, "--json")
    assert resumed["best_fitness"] is not None and resumed["evaluated_best_fitness"] is not None
    assert resumed["human_fitness"] is not None  # without a human file: the env's own reward
    has_sparse = case != "neither"
    assert (resumed["sparse_fitness"] is not None) == has_sparse
    assert (resumed["human_normalized_score"] is not None) == has_sparse
    first = (summary.path / "round_00" / "cand_00" / "reward.py").read_text()
    assert is_env_reward(first) == (case != "human_and_sparse")
    statuses = [c["status"] for c in RunStore(Path(runs)).open_run(run_id).candidates()]
    assert statuses == ["trained"] * samples
    if samples > 1:
        terms = (summary.path / "round_00" / "cand_01" / "reward.py").read_text()
        assert '"alive_bonus"' in terms and '"keep_pole_angle_within_limit"' in terms

    evaluated = _invoke("evaluate", run_id, "--runs-dir", runs, "--json")
    assert evaluated["human"]["fitness"] == resumed["human_fitness"]  # the seeds were reused
    best_is_env = is_env_reward(Path(resumed["best_reward_path"]).read_text())
    assert evaluated["best_is_env_reward"] == best_is_env == resumed["best_is_env_reward"]
    # A best that is the human reward (round 0's first candidate with a human file) or the
    # environment's reward standing in for it is one training for both arms, not two.
    best_is_human = samples == 1 or best_is_env
    assert evaluated["best_is_human_reward"] == best_is_human == resumed["best_is_human_reward"]
    assert (summary.path / "evaluation" / "human_s0").exists() == (not best_is_human)
    assert evaluated["human"]["per_seed"] == (
        evaluated["best"]["per_seed"] if best_is_human else [resumed["human_fitness"]]
    )
    assert evaluated["sparse"]["per_seed"] == ([resumed["sparse_fitness"]] if has_sparse else [])

    rerun = _invoke("replay", run_id, "--rerun", "--no-evaluate", "--runs-dir", runs, "--json")
    assert rerun["prompts_reproduced"] and rerun["diverged"] is None
    assert [c["new_status"] for c in rerun["candidates"]] == statuses


def _interrupt(*args: Any, **kwargs: Any) -> Any:
    raise KeyboardInterrupt


@pytest.mark.slow
def test_a_run_that_trains_nothing_exits_non_zero_and_says_why(
    tmp_path: Path, scripted_llm
) -> None:
    server = scripted_llm(default_reply=SYNTAX_ERROR)
    result = runner.invoke(
        app,
        ["run", "cartpole", "--model", server.model, "--api-base", server.base_url,
         "--rounds", "1", "--samples", "1", "--sandbox", "process", "--runs-dir",
         str(tmp_path), "--json"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "no trained candidate" in text and "of 3 candidates, 3 rejected by the critic" in text
    assert "syntax_error" in text and "--samples 4" in text and "--feedback" in text
    assert "Traceback" not in result.output
    [summary] = RunStore(tmp_path).list_runs()
    assert summary.status == "failed"
    assert "no trained candidate" in RunStore(tmp_path).open_run(summary.path).info()["error"]
