"""`--schedule halving`: rungs of growing budgets, survivors continue from their saved state."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewardsmith.eureka_loop.halving import on_rollout, rungs, survivors, unsupported
from rewardsmith.eureka_loop.runner import resume_run, start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.views import open_view


def test_rungs_grow_by_half_and_end_at_the_full_budget() -> None:
    assert [r.steps for r in rungs(8192, 4)] == [2048, 4096, 8192]
    assert [r.steps for r in rungs(8192, 16)] == [2048, 4096, 8192]  # at most three rungs
    assert [r.steps for r in rungs(8192, 3)] == [2048, 4096, 8192]
    assert [r.steps for r in rungs(8192, 2)] == [4096, 8192]
    assert [r.steps for r in rungs(8192, 1)] == [8192]
    assert rungs(8192, 4)[-1].last and not rungs(8192, 4)[0].last
    assert [survivors(n) for n in (1, 2, 3, 4, 5)] == [1, 1, 1, 2, 2]
    # A rung ends on a whole rollout: a learner stopped mid-rollout trains on past it.
    assert [on_rollout(s, 256) for s in (2047, 2048, 2100, 100)] == [1792, 2048, 2048, 256]
    assert unsupported("sb3", "ppo") is None
    assert "replay buffer" in (unsupported("sb3", "sac") or "")
    assert unsupported("jax", "ppo") is not None


def _config(**overrides: object) -> LoopConfig:
    base: dict[str, object] = {
        "task_id": "cartpole",
        "rounds": 1,
        "samples": 4,
        "steps": 8192,
        "parallel": 2,
        "evaluate": False,
        "preference_check": False,
        "sandbox": "process",
        "schedule": "halving",
    }
    return LoopConfig(**{**base, **overrides})  # type: ignore[arg-type]


def _outcomes(run_dir: Path) -> dict[str, dict[str, object]]:
    return {
        p.parent.name: json.loads(p.read_text())
        for p in sorted(run_dir.glob("round_00/cand_*/outcome.json"))
    }


@pytest.mark.slow
def test_survivors_continue_and_the_steps_add_up(tmp_path: Path) -> None:
    result = start_run(_config(), tmp_path)
    run_dir = Path(result["run_dir"])
    outcomes = _outcomes(run_dir)
    assert len(outcomes) == 4
    steps = sorted(int(o["steps"]) for o in outcomes.values())  # type: ignore[call-overload]
    assert steps == [2048, 2048, 4096, 8192]  # 2 x the full budget, not 4 x
    finalist = next(name for name, o in outcomes.items() if o["steps"] == 8192)
    # The finalist's reflection log spans its whole training, across the three rungs.
    checkpoints = [c["step"] for c in outcomes[finalist]["checkpoints"]]  # type: ignore[attr-defined]
    assert checkpoints == sorted(checkpoints) and checkpoints[-1] >= 8192 and checkpoints[0] < 2048
    for rung in range(3):
        assert (run_dir / "round_00" / finalist / f"rung_{rung}.json").is_file()
    # Only a candidate that trained the full budget can be the best.
    assert result["best_candidate"] == f"r00c{int(finalist[-2:]):02d}"
    view = open_view(run_dir.name, tmp_path)
    by_steps = {c.steps: c for c in view.rounds[0].candidates}
    assert by_steps[8192].stopped_at_rung is None and by_steps[4096].stopped_at_rung == 1
    assert "stopped early at rung 1" in by_steps[2048].fate


@pytest.mark.slow
def test_a_sole_survivor_goes_from_the_first_rung_to_the_full_budget(tmp_path: Path) -> None:
    result = start_run(_config(samples=3), tmp_path)
    run_dir = Path(result["run_dir"])
    outcomes = _outcomes(run_dir)
    steps = sorted(int(o["steps"]) for o in outcomes.values())  # type: ignore[call-overload]
    assert steps == [2048, 2048, 8192]  # 1.5 x the full budget, not 3 x
    finalist = next(name for name, o in outcomes.items() if o["steps"] == 8192)
    rung_files = sorted(p.name for p in (run_dir / "round_00" / finalist).glob("rung_*.json"))
    assert rung_files == ["rung_0.json", "rung_2.json"]  # it continued from rung 0's state
    checkpoints = [c["step"] for c in outcomes[finalist]["checkpoints"]]  # type: ignore[attr-defined]
    assert checkpoints == sorted(checkpoints) and checkpoints[0] < 2048


@pytest.mark.slow
def test_a_run_killed_mid_rung_resumes_without_retraining_a_finished_rung(
    tmp_path: Path,
) -> None:
    command = [
        *(sys.executable, "-m", "rewardsmith.cli", "run", "cartpole", "--rounds", "1"),
        *("--samples", "4", "--steps", "16384", "--parallel", "2", "--schedule", "halving"),
        *("--no-evaluate", "--no-preference-check", "--sandbox", "process"),
        *("--runs-dir", str(tmp_path)),
    ]
    driver = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    first_rung: list[Path] = []
    while len(first_rung) < 4 and time.monotonic() < deadline and driver.poll() is None:
        first_rung = sorted(tmp_path.glob("*/round_00/cand_*/rung_0.json"))
        time.sleep(0.1)
    assert len(first_rung) == 4, "the first rung did not finish"
    os.killpg(driver.pid, signal.SIGKILL)  # the second rung has just started
    assert driver.wait() == -signal.SIGKILL
    run_dir = first_rung[0].parents[2]
    finished = {p: p.stat().st_mtime_ns for p in run_dir.glob("round_00/cand_*/rung_*.json")}

    resume_run(run_dir.name, tmp_path)
    for path, mtime in finished.items():
        assert path.stat().st_mtime_ns == mtime, f"{path} was trained again"
    steps = sorted(int(o["steps"]) for o in _outcomes(run_dir).values())  # type: ignore[call-overload]
    assert steps == [4096, 4096, 8192, 16384]
