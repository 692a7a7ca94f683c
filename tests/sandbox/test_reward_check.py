"""The orchestrator half of the sandboxed checks (smoke test, bank scoring): inputs, logs, records.

A scripted sandbox stands in for the sandboxed program, so these run in milliseconds: it records
what the program would find, and writes what a program (honest or not) might leave behind.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rewardsmith.atomic import SCHEMA_VERSION
from rewardsmith.jobs.score import score_bank
from rewardsmith.jobs.smoke import SmokeReport, smoke_test
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.sandbox.types import Limits, SandboxRun

SOURCE = "def compute_reward(state, action, next_state): ...\n"


class ScriptedSandbox:
    """Runs `script(work_dir)` in place of the program: records the folder, plays the program."""

    name = "scripted"

    def __init__(self, script: Callable[[Path], None], returncode: int = 0) -> None:
        self.script, self.returncode = script, returncode
        self.seen: list[str] = []

    def run(self, module, args, writable, limits, on_poll=None, readable=None) -> SandboxRun:  # type: ignore[no-untyped-def]
        work_dir = Path(args[0])
        assert writable == [work_dir]
        self.seen = sorted(p.name for p in work_dir.iterdir())
        self.script(work_dir)
        return SandboxRun(self.returncode, False, 0.1, "checked\n", 8, "scripted")


def writes(name: str, text: str) -> Callable[[Path], None]:
    """A stand-in program that writes `text`, versioned as the real programs' records are when
    it is a JSON object."""
    try:
        record = json.loads(text)
    except ValueError:
        record = None
    if isinstance(record, dict):
        text = json.dumps({"schema_version": SCHEMA_VERSION, **record})
    return lambda work_dir: (work_dir / name).write_text(text)


class Adapter:
    id = "cartpole"


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    """A stand-in bank of 2 episodes (only its episode count matters here)."""
    path = tmp_path / "bank.npz"
    np.savez(path, offsets=np.array([0, 3, 5]))
    return path


def smoke(tmp_path: Path, sandbox: ScriptedSandbox) -> SmokeReport:
    states = tmp_path / "states.npz"
    states.write_bytes(b"data")
    return smoke_test(Adapter(), SOURCE, tmp_path / "cand" / "smoke", states, sandbox, Limits())


def test_a_good_record_comes_back_and_the_input_copy_is_removed(tmp_path: Path) -> None:
    record = {"status": "ok", "warnings": ["nondeterministic: noisy"], "calls_per_s": 10.0}
    sandbox = ScriptedSandbox(writes("smoke.json", json.dumps(record)))
    report = smoke(tmp_path, sandbox)
    assert report.ok and report.error is None and report.calls_per_s == 10.0
    assert report.warnings == ["nondeterministic: noisy"]
    assert sandbox.seen == ["reward.py", "states.npz"]
    work = tmp_path / "cand" / "smoke"
    assert not (work / "states.npz").exists() and (tmp_path / "states.npz").exists()
    assert (tmp_path / "cand" / "logs" / "smoke.log").read_text() == "checked\n"
    assert not (work / "smoke.log").exists()


def test_the_work_dir_is_made_anew_for_every_check(tmp_path: Path) -> None:
    """Whatever an earlier run left (a link in place of reward.py, stray files) is gone."""
    host = tmp_path / "host.pth"
    host.write_text("untouched\n")

    def plant(work_dir: Path) -> None:
        (work_dir / "reward.py").unlink()
        (work_dir / "reward.py").symlink_to(host)
        (work_dir / "smoke.log").symlink_to(host)
        (work_dir / "stray").write_text("x")

    smoke(tmp_path, ScriptedSandbox(plant))
    sandbox = ScriptedSandbox(
        writes("smoke.json", '{"status": "ok", "warnings": [], "calls_per_s": 1.0}')
    )
    assert smoke(tmp_path, sandbox).ok
    assert sandbox.seen == ["reward.py", "states.npz"]
    assert host.read_text() == "untouched\n"
    assert not (tmp_path / "cand" / "smoke").exists()  # a check folder goes once read


@pytest.mark.parametrize(
    "garbage", ["not json", "[1, 2]", '{"status": 3}', '{"status": "ok", "warnings": []}']
)
def test_an_overwritten_result_is_a_named_error_not_a_crash(tmp_path: Path, garbage: str) -> None:
    report = smoke(tmp_path, ScriptedSandbox(writes("smoke.json", garbage)))
    assert not report.ok and report.error is not None
    assert report.error.category is ErrorCategory.BAD_WORKER_OUTPUT
    assert report.error.message.startswith("smoke test on cartpole: smoke.json: ")


def test_no_result_is_classified_with_the_check_named(tmp_path: Path) -> None:
    report = smoke(tmp_path, ScriptedSandbox(lambda work_dir: None, returncode=1))
    assert report.error is not None and report.error.category is ErrorCategory.CRASHED
    assert report.error.message == "smoke test on cartpole: the worker exited with status 1"
    report = smoke(tmp_path, ScriptedSandbox(lambda work_dir: None, returncode=0))
    assert report.error is not None and report.error.category is ErrorCategory.SANDBOX_DIED


def test_a_reward_error_in_the_record_is_the_reports_error(tmp_path: Path) -> None:
    error = {"category": "shape_error", "message": "total has shape (3,)"}
    record = {"status": "error", "error": error, "warnings": [], "calls_per_s": None}
    report = smoke(tmp_path, ScriptedSandbox(writes("smoke.json", json.dumps(record))))
    assert report.error is not None and report.error.category is ErrorCategory.SHAPE_ERROR


def test_bank_scores_come_back_one_per_episode(tmp_path: Path, bank: Path) -> None:
    record = {
        "status": "ok",
        "returns": [1.0, 2.0],
        "discounted": [0.5, 1.5],
        "per_step": [0.3, 1],
        "components": {"alive": [1.0, 2.0]},
    }
    sandbox = ScriptedSandbox(writes("score.json", json.dumps(record)))
    scores = score_bank(SOURCE, tmp_path / "cand" / "preference", bank, sandbox, Limits())
    assert (
        scores.ok and scores.per_step == [0.3, 1.0] and scores.components == {"alive": [1.0, 2.0]}
    )
    assert sandbox.seen == ["bank.npz", "reward.py"]
    assert not (tmp_path / "cand" / "preference" / "bank.npz").exists()
    assert (tmp_path / "cand" / "logs" / "score.log").read_text() == "checked\n"
    record["returns"] = [1.0, 2.0, 3.0]
    sandbox = ScriptedSandbox(writes("score.json", json.dumps(record)))
    scores = score_bank(SOURCE, tmp_path / "cand" / "preference", bank, sandbox, Limits())
    assert scores.error is not None and scores.error.category is ErrorCategory.BAD_WORKER_OUTPUT
    assert "returns has 3 values, not 2" in scores.error.message
