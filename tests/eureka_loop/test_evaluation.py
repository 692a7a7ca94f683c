"""The final evaluation: a best that is the human reward is trained once and reported for both arms."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.evaluation import EvalKey, same_reward, shared_arm_note
from rewardsmith.eureka_loop.reporter import NullReporter
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import CandidateKey, LoopConfig

HUMAN = '''"""Alive bonus."""

import numpy as np


def compute_reward(state, action, next_state):
    alive = np.ones(len(action))  # +1 per step
    return alive, {"alive": alive}
'''


def test_same_reward_ignores_comments_and_layout_but_not_code() -> None:
    relaid = HUMAN.replace("  # +1 per step", "").replace(
        "np.ones(len(action))", "np.ones(\n        len(action)\n    )"
    )
    assert same_reward(HUMAN, "# a comment\n" + relaid)
    assert not same_reward(HUMAN, HUMAN.replace("np.ones(", "2.0 * np.ones("))
    assert not same_reward(HUMAN, HUMAN.replace('{"alive":', '{"alive_bonus":'))
    assert not same_reward(HUMAN, HUMAN.replace('"""Alive bonus."""', '"""Other."""'))
    # None is the environment's own reward: the same only as itself.
    assert same_reward(None, None) and not same_reward(None, HUMAN)
    assert not same_reward("def broken(:\n", HUMAN)
    assert same_reward("def broken(:", "def broken(:\n")  # code that does not parse: as text


def test_the_note_names_which_reward_stands_for_both_arms() -> None:
    assert shared_arm_note({"best": HUMAN, "human": HUMAN}) == (
        "best is the human reward; evaluated once"
    )
    assert "environment's own reward" in (shared_arm_note({"best": None, "human": None}) or "")
    assert shared_arm_note({"best": HUMAN.replace("ones", "zeros"), "human": HUMAN}) is None


class Recorder(NullReporter):
    """Counts the final evaluation's trainings, by arm."""

    def __init__(self) -> None:
        self.trainings: list[str] = []

    def candidate(self, key: CandidateKey | EvalKey, status: str, detail: str = "") -> None:
        if isinstance(key, EvalKey) and status == "training":
            self.trainings.append(f"{key.arm}_s{key.seed_index}")


@pytest.mark.slow
def test_a_best_that_is_the_human_reward_is_trained_once_for_both_arms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The task's own number of evaluation seeds applies where the run names none.
    cartpole = type(load_task("cartpole"))
    monkeypatch.setattr(cartpole, "training", replace(cartpole.training, eval_seeds=1))
    # One candidate: the offline designer's first, the human reward unchanged (verbatim).
    config = LoopConfig(
        task_id="cartpole", rounds=1, samples=1, steps=1_000, parallel=2, sandbox="process"
    )
    recorder = Recorder()
    result = start_run(config, tmp_path, recorder)
    run_dir = Path(result["run_dir"])
    best_code = Path(result["best_reward_path"]).read_text()
    assert best_code == load_task("cartpole").reward_source("human")

    assert sorted(recorder.trainings) == ["best_s0", "sparse_s0"]  # no human_s0 training
    assert sorted(p.name for p in (run_dir / "evaluation").iterdir() if p.is_dir()) == [
        "best_s0",
        "sparse_s0",
    ]
    report: dict[str, Any] = json.loads((run_dir / "evaluation" / "evaluation.json").read_text())
    assert report["best_is_human_reward"] and not report["best_is_env_reward"]
    assert report["note"] == "best is the human reward; evaluated once"
    assert report["versus_human"] is None and result["versus_human"] is None  # one reward
    assert report["human"]["trained_as"] == "best" and report["best"]["trained_as"] == "best"
    assert report["human"]["per_seed"] == report["best"]["per_seed"] != []
    assert report["sparse"]["per_seed"] and report["sparse"]["trained_as"] == "sparse"
    assert result["human_fitness"] == result["evaluated_best_fitness"] is not None
    assert result["best_is_human_reward"] and result["evaluation_note"] == report["note"]
    if result["human_fitness"] != result["sparse_fitness"]:  # (best - sparse) / |human - sparse|
        assert result["human_normalized_score"] == pytest.approx(
            1.0 if result["human_fitness"] > result["sparse_fitness"] else -1.0
        )

    # `evaluate` reuses every seed (nothing trains) and says how the arms were filled.
    shown = CliRunner().invoke(app, ["evaluate", str(run_dir), "--runs-dir", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    assert "best is the human reward; evaluated once" in " ".join(shown.output.split())
    assert "plan:" not in shown.output  # the run's plan of rounds is not what `evaluate` trains
    assert not (run_dir / "evaluation" / "human_s0").exists()
