"""`rewardsmith run` from the command line: JSON output, clear errors, and the runs listing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from rewardsmith.choices import SandboxChoice, Schedule
from rewardsmith.cli import app
from rewardsmith.commands.run import _score_meaning
from rewardsmith.eureka_loop.config import LoopConfig

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


@pytest.mark.parametrize(
    ("option", "allowed"),
    [
        ("--schedule", "'full', 'halving'"),
        ("--sandbox", "'auto', 'process', 'docker', 'none'"),
        ("--backend", "'sb3', 'jax'"),
        ("--executor", "'local', 'ray'"),
        ("--algo", "'ppo', 'sac'"),
    ],
)
def test_a_wrong_choice_is_refused_with_the_allowed_ones(
    tmp_path: Path, option: str, allowed: str
) -> None:
    result = runner.invoke(app, ["run", "cartpole", option, "halve", "--runs-dir", str(tmp_path)])
    assert result.exit_code == 2  # a usage error, before anything is made
    said = " ".join(result.output.replace("│", " ").split())  # unwrapped from Rich's box
    assert "'halve' is not one of" in said and allowed in said, said
    assert not any(tmp_path.iterdir())


def test_every_config_option_is_a_run_option_with_its_help() -> None:
    """Declared once: `run` takes each `LoopConfig` field that has a `cli` entry, with its help,
    its default and its type, and passes it through unchanged."""
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    by_name = {p.name: p for p in command.params}
    offered = [f for f in dataclasses.fields(LoopConfig) if "cli" in f.metadata]
    assert len(offered) == 32
    for spec in offered:
        param = by_name[spec.name]
        assert param.help == spec.metadata["cli"].help, spec.name
    assert {f.name for f in dataclasses.fields(LoopConfig)} - by_name.keys() == {
        "task_id",  # the `task` argument
        "round_retries",
        "train_timeout_s",
        "temperature",
    }


def test_a_recorded_config_reads_back_as_enums_and_writes_strings() -> None:
    config = LoopConfig.from_dict({"task_id": "line", "schedule": "halving", "sandbox": "none"})
    assert config.schedule is Schedule.HALVING and config.sandbox is SandboxChoice.NONE
    assert json.loads(json.dumps(config.to_dict()))["schedule"] == "halving"
    with pytest.raises(ValueError, match="unknown schedule 'halve'; choose one of full, halving"):
        LoopConfig(task_id="line", schedule="halve")  # type: ignore[arg-type]


def test_score_meaning_says_when_sparse_beat_human() -> None:
    usual = {"evaluated_best_fitness": 0.9, "human_fitness": 0.8, "sparse_fitness": 0.5}
    assert _score_meaning(usual).startswith("1.0 = as good as the human reward")
    inverted = {"evaluated_best_fitness": 0.837, "human_fitness": 0.795, "sparse_fitness": 0.814}
    meaning = _score_meaning(inverted)
    assert "sparse reward beat the human reward" in meaning and "+0.042" in meaning
