"""The next design round's prompt carries the person's feedback: the previous round's
`feedback.md` and any `rewardsmith feedback` text, beside `--feedback`; a round without any asks
exactly what it asked before."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.designer import build_messages
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.judgements import PENDING_FEEDBACK, RoundJudgements
from rewardsmith.runs.store import Run


def user_prompt(run_dir: Path, round_: int, feedback: str | None = None) -> str:
    ctx: Any = SimpleNamespace(
        adapter=load_task("line"),
        config=LoopConfig(task_id="line", feedback=feedback),
        run=Run(run_dir),
    )
    messages = build_messages(ctx, {"round": round_, "candidates": []})
    return messages[1]["content"]


def test_the_previous_rounds_feedback_and_pending_text_reach_the_designer(tmp_path: Path) -> None:
    plain_prompt = user_prompt(tmp_path, 1, feedback="USER-FLAG")
    assert "watching" not in plain_prompt
    RoundJudgements(tmp_path, 0).write_feedback("HUMAN-ROUND-0: it <jitters>")
    (tmp_path / PENDING_FEEDBACK).write_text("PENDING-NOTE\n")
    prompt = user_prompt(tmp_path, 1, feedback="USER-FLAG")
    assert "USER-FLAG" in prompt and "HUMAN-ROUND-0: it <jitters>" in prompt
    assert "PENDING-NOTE" in prompt
    assert prompt.index("USER-FLAG") < prompt.index("HUMAN-ROUND-0")
    assert not (tmp_path / PENDING_FEEDBACK).exists()
    assert user_prompt(tmp_path, 1, feedback="USER-FLAG") == prompt  # a resumed round: the same
    assert "HUMAN-ROUND-0" not in user_prompt(tmp_path, 2)


def test_the_feedback_command_stores_text_for_the_next_round(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs" / "20260101-000000-line-abcd"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text('{"schema_version": 1, "status": "interrupted"}')
    result = CliRunner().invoke(
        app,
        ["feedback", str(run_dir), "slow down near the goal", "--runs-dir", str(tmp_path / "runs")],
    )
    assert result.exit_code == 0, result.output
    assert (run_dir / PENDING_FEEDBACK).read_text() == "slow down near the goal\n"
    assert "slow down near the goal" in user_prompt(run_dir, 3)
