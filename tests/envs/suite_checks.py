"""Checks every optional-suite task shares (Gymnasium-Robotics, Meta-World): SAC with halving's
note, and `rewardsmith train` reporting a success rate as the fitness."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.envs import load_task

WIDE = {"COLUMNS": "200"}


def assert_sac_and_halving_trains_fully(task: str) -> None:
    """SAC learns the task, its buffer holds the whole run, and halving says it trains fully."""
    from rewardsmith.eureka_loop.halving import unsupported

    training = load_task(task).training
    assert training.algo == "sac" and training.hyperparams["sac"]["buffer_size"] >= training.steps
    assert "does not carry over" in (unsupported("sb3", training.algo) or "")


def assert_train_reports_success(tmp_path: Path, task: str, components: set[str]) -> None:
    """`rewardsmith train TASK --reward human` on a tiny budget: ok, a success rate that is the
    fitness, and the human reward's components."""
    args = ["train", task, "--reward", "human", "--steps", "300", "--json"]
    result = CliRunner().invoke(
        app, [*args, "--sandbox", "process", "--out", str(tmp_path / "job")], env=WIDE
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["task"] == task
    assert 0.0 <= data["success_rate"] <= 1.0
    assert data["fitness"] == data["success_rate"]  # fitness is success, per episode
    assert set(data["components"]) == components
