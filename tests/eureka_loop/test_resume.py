"""Crash safety: kill -9 mid-training, Ctrl-C, then resume without repeating any LLM call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewardsmith.eureka_loop.runner import resume_run
from tests.eureka_loop.rewards import GOOD_UPRIGHT

pytestmark = pytest.mark.slow


def _wait_for(predicate, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting for the run to get there")


def _ctrl_c_as_in_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run_dir(runs_dir: Path) -> Path:
    dirs = [p for p in runs_dir.iterdir() if (p / "run.json").exists()]
    return dirs[0] if dirs else runs_dir / "missing"


def test_sigkill_then_ctrl_c_then_resume_repeats_no_llm_call(tmp_path: Path, scripted_llm) -> None:
    server = scripted_llm(default_reply=GOOD_UPRIGHT)
    command = [
        sys.executable,
        "-m",
        "rewardsmith.cli",
        "run",
        "cartpole",
        "--model",
        server.model,
        "--api-base",
        server.base_url,
        "--rounds",
        "2",
        "--samples",
        "2",
        "--steps",
        "6000",
        "--parallel",
        "1",
        "--no-evaluate",
        "--videos",  # what is filmed is not what this test is about
        "none",
        "--runs-dir",
        str(tmp_path),
        "--sandbox",
        "process",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSMITH_")}
    first = subprocess.Popen(
        command, start_new_session=True, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    # 1. kill -9 while the second candidate of round 0 is training.
    _wait_for(
        lambda: (_run_dir(tmp_path) / "round_00" / "cand_01" / "job" / "progress.json").exists()
    )
    finished = _run_dir(tmp_path) / "round_00" / "cand_00" / "outcome.json"
    assert finished.exists()
    finished_mtime = finished.stat().st_mtime_ns
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    run_dir = _run_dir(tmp_path)
    assert server.request_count == 2
    listing = subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", "runs", "--runs-dir", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert [r["status"] for r in json.loads(listing.stdout)] == ["interrupted"]

    # 2. resume, then Ctrl-C while round 1 trains: a clean stop that says how to resume.
    second = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rewardsmith.cli",
            "resume",
            run_dir.name,
            "--runs-dir",
            str(tmp_path),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # As in a terminal: a suite started in the background (`cmd &`) inherits SIGINT ignored,
        # and Python then never turns Ctrl-C into KeyboardInterrupt.
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    _wait_for(lambda: (run_dir / "round_01" / "cand_00" / "job" / "progress.json").exists())
    second.send_signal(signal.SIGINT)
    output, _ = second.communicate(timeout=60)
    assert second.returncode == 130, output
    assert "rewardsmith resume" in output
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"
    assert finished.stat().st_mtime_ns == finished_mtime  # the finished candidate was not retrained

    # 3. resume to the end.
    result = resume_run(run_dir, tmp_path)
    assert server.request_count == 4  # two design calls per round, none repeated
    assert finished.stat().st_mtime_ns == finished_mtime
    assert [h["round"] for h in result["history"]] == [0, 1]
    for round_ in (0, 1):
        for idx in (0, 1):
            outcome = json.loads(
                (run_dir / f"round_{round_:02d}" / f"cand_{idx:02d}" / "outcome.json").read_text()
            )
            assert outcome["ok"] and outcome["fitness"] is not None
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "finished"
    assert info["summary"]["best_fitness"] == result["best_fitness"]
    with pytest.raises(ValueError, match="already finished"):
        resume_run(run_dir, tmp_path)


def test_a_run_killed_right_after_a_node_finished_resumes(tmp_path: Path) -> None:
    """A kill between a node's saved writes and the next checkpoint leaves a snapshot whose
    `next` is empty while the finished node's task is still pending: that run is not finished.

    The state is made exactly: a finished run's checkpoints after the train step are dropped,
    keeping the train node's writes (what SQLite holds after such a kill)."""
    import sqlite3

    from rewardsmith.eureka_loop.graph import build_graph
    from rewardsmith.eureka_loop.runner import start_run
    from rewardsmith.eureka_loop.state import LoopConfig

    config = LoopConfig(
        task_id="cartpole",
        rounds=1,
        samples=1,
        steps=2_000,
        parallel=1,
        evaluate=False,
        preference_check=False,
        sandbox="process",
    )
    run_dir = Path(start_run(config, tmp_path)["run_dir"])
    thread = {"configurable": {"thread_id": run_dir.name}}
    history = list(build_graph(run_dir / "state.sqlite").get_state_history(thread))
    train_step = next(h for h in history if h.next == ("train",))
    later = [h.config["configurable"]["checkpoint_id"] for h in history if h is not train_step]
    later = later[: history.index(train_step)]  # the history is newest first
    with sqlite3.connect(run_dir / "state.sqlite") as db:
        for checkpoint_id in later:
            db.execute("DELETE FROM checkpoints WHERE checkpoint_id = ?", (checkpoint_id,))
            db.execute("DELETE FROM writes WHERE checkpoint_id = ?", (checkpoint_id,))
    outcome = run_dir / "round_00" / "cand_00" / "outcome.json"
    trained_at = outcome.stat().st_mtime_ns

    result = resume_run(run_dir.name, tmp_path)
    assert [h["round"] for h in result["history"]] == [0]
    assert result["best_fitness"] is not None
    assert outcome.stat().st_mtime_ns == trained_at  # the train node's result was kept
