"""`rewardsmith run` from the command line: JSON output, clear errors, and the runs listing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.commands.run import _score_meaning

runner = CliRunner()


@pytest.mark.slow
def test_run_json_reports_the_human_normalised_score(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "cartpole",
            "--rounds",
            "1",
            "--samples",
            "2",
            "--steps",
            "1500",
            "--eval-seeds",
            "1",
            "--parallel",
            "2",
            "--runs-dir",
            str(tmp_path),
            "--sandbox",
            "process",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    for key in (
        "run_id",
        "best_fitness",
        "best_reward_path",
        "human_fitness",
        "sparse_fitness",
        "human_normalized_score",
    ):
        assert key in data
    assert Path(data["best_reward_path"]).read_text().count("def compute_reward") == 1
    listing = runner.invoke(app, ["runs", "--runs-dir", str(tmp_path), "--json"])
    assert json.loads(listing.stdout)[0]["status"] == "finished"


@pytest.mark.slow
def test_missing_api_key_is_one_clear_error_and_creates_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = runner.invoke(
        app, ["run", "cartpole", "--model", "gpt-4o", "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert "OPENAI_API_KEY" in result.output and "Traceback" not in result.output
    assert not any(tmp_path.iterdir())


def test_unknown_task_is_one_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", "cartpol", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 1
    assert "unknown task 'cartpol'" in result.output and "cartpole" in result.output


def test_unknown_schedule_is_one_clear_error(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["run", "cartpole", "--schedule", "halve", "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert "unknown schedule 'halve'" in result.output and "full, halving" in result.output
    assert not any(tmp_path.iterdir())


def test_score_meaning_says_when_sparse_beat_human() -> None:
    usual = {"evaluated_best_fitness": 0.9, "human_fitness": 0.8, "sparse_fitness": 0.5}
    assert _score_meaning(usual).startswith("1.0 = as good as the human reward")
    inverted = {"evaluated_best_fitness": 0.837, "human_fitness": 0.795, "sparse_fitness": 0.814}
    meaning = _score_meaning(inverted)
    assert "sparse reward beat the human reward" in meaning and "+0.042" in meaning
