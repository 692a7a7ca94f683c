"""`rewardsmith tasks` and `rewardsmith train` through Typer's CliRunner, as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from rewardsmith.cli import app
from rewardsmith.commands import common
from rewardsmith.envs import list_tasks

EXAMPLE = Path(__file__).parents[2] / "rewardsmith" / "envs" / "examples" / "cartpole_task.toml"
runner = CliRunner()
WIDE = {"COLUMNS": "200"}  # Rich wraps long table rows at the 80 columns a non-terminal gets


def invoke(args: list[str]) -> Result:
    return runner.invoke(app, args, env=WIDE)


def test_tasks_table_lists_every_built_in() -> None:
    result = invoke(["tasks"])
    assert result.exit_code == 0, result.output
    for task in list_tasks():
        assert task in result.output
    assert "tasks show" in result.output


def test_tasks_json() -> None:
    result = invoke(["tasks", "--json"])
    assert result.exit_code == 0, result.output
    described = json.loads(result.stdout)
    assert [task["id"] for task in described] == list_tasks()
    cartpole = next(task for task in described if task["id"] == "cartpole")
    assert cartpole["fields"][0]["name"] == "cart_position"
    assert cartpole["fitness"] and cartpole["goal"]


def test_tasks_show_cartpole() -> None:
    result = invoke(["tasks", "show", "cartpole"])
    assert result.exit_code == 0, result.output
    for text in (
        "CartPole-v1",
        "Balance a pole",
        "pole_angular_velocity",
        "rad/s",
        "fitness:",
        "success:",
    ):
        assert text in result.output


def test_tasks_show_task_file() -> None:
    result = invoke(["tasks", "show", "--task-file", str(EXAMPLE), "--json"])
    assert result.exit_code == 0, result.output
    described = json.loads(result.stdout)
    assert described["id"] == "cartpole-file" and described["source"] == str(EXAMPLE.resolve())


def test_tasks_show_unknown_task_is_one_clear_line() -> None:
    result = invoke(["tasks", "show", "cartpol"])
    assert result.exit_code == 1
    assert "unknown task 'cartpol'" in result.output and "cartpole" in result.output
    assert "Traceback" not in result.output


def test_broken_task_file_is_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "task.toml"
    path.write_text(EXAMPLE.read_text().replace("index = 3", "index = 7"))
    result = invoke(["tasks", "show", "--task-file", str(path)])
    assert result.exit_code == 1
    assert "fields.pole_angular_velocity.index" in result.output and "out of range" in result.output
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_train_cartpole_human_json(tmp_path: Path) -> None:
    args = ["train", "cartpole", "--reward", "human", "--steps", "2000", "--json"]
    result = invoke([*args, "--sandbox", "process", "--out", str(tmp_path / "job")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["error"] is None
    assert data["task"] == "cartpole" and data["reward"] == "human reward"
    assert data["fitness"] >= 8 and 0.0 <= data["success_rate"] <= 1.0
    assert set(data["components"]) == {"alive"}
    assert len(data["checkpoints"]) >= 5
    assert Path(data["candidate_dir"], "eval", "evaluation.json").exists()
    # SB3's TensorBoard log of the training, in the job's own folder.
    assert list(Path(data["candidate_dir"], "job", "tensorboard").glob("PPO_1/events.out.*"))


@pytest.mark.parametrize(
    ("source", "category"),
    [
        (
            "import numpy as np\n\ndef compute_reward(state, action, next_state)\n    return 1\n",
            "syntax_error",
        ),
        (
            "import os\n\ndef compute_reward(state, action, next_state):\n    return 1\n",
            "forbidden_import",
        ),
        ("def compute_reward(state, next_state):\n    return 1\n", "signature_error"),
    ],
)
def test_train_with_a_broken_reward_prints_one_clear_line(
    source: str, category: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The width a log or a pipe gets; the console reads COLUMNS once, when it is built.
    monkeypatch.setattr(common.err_console, "width", 60)
    reward = tmp_path / "reward.py"
    reward.write_text(source)
    result = invoke(["train", "cartpole", "--reward", str(reward), "--out", str(tmp_path / "job")])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error:") and category in lines[0]
    assert "Traceback" not in result.output
    assert not (tmp_path / "job").exists(), "a static error must not start a sandbox"


def test_train_with_a_missing_reward_file(tmp_path: Path) -> None:
    result = invoke(["train", "cartpole", "--reward", str(tmp_path / "nope.py")])
    assert (
        result.exit_code == 1
        and "does not exist" in result.output
        and "Traceback" not in result.output
    )


def test_train_sparse_on_a_task_file_without_one(tmp_path: Path) -> None:
    path = tmp_path / "task.toml"
    path.write_text(EXAMPLE.read_text().replace('sparse_reward = "cartpole_sparse.py"', ""))
    result = invoke(["train", "--task-file", str(path), "--reward", "sparse"])
    assert result.exit_code == 1 and "sparse_reward" in result.output


@pytest.mark.slow
def test_train_task_file_human(tmp_path: Path) -> None:
    args = ["train", "--task-file", str(EXAMPLE), "--reward", "human", "--steps", "1024", "--json"]
    result = invoke([*args, "--sandbox", "process", "--out", str(tmp_path / "job")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True and data["task"] == "cartpole-file"
    assert data["reward"] == "human reward (the environment's own)"
    assert data["fitness"] >= 8 and set(data["components"]) == {"env_reward"}


def test_train_refuses_an_out_folder_that_holds_a_job(tmp_path: Path) -> None:
    earlier = tmp_path / "job" / "job" / "metrics.jsonl"
    earlier.parent.mkdir(parents=True)
    earlier.write_text('{"step": 1}\n')
    result = invoke(["train", "cartpole", "--out", str(tmp_path / "job")])
    assert result.exit_code == 1
    assert "already holds a training job" in result.output and "--out" in result.output
    assert earlier.read_text() == '{"step": 1}\n'
