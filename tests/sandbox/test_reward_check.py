"""The orchestrator half of the sandboxed checks: inputs, logs and unreadable results."""

from __future__ import annotations

import json
from pathlib import Path

from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.sandbox.executor import Limits, SandboxRun
from rewardsmith.sandbox.reward_check import run_reward_check


class ScriptedSandbox:
    """Stands in for the sandbox process: writes `result` as the check's result file."""

    name = "scripted"

    def __init__(self, result: str | None, returncode: int = 0) -> None:
        self.result, self.returncode = result, returncode
        self.seen: list[str] = []

    def run(self, module, args, writable, limits, on_poll=None, readable=None) -> SandboxRun:
        work_dir = Path(args[0])
        self.seen = sorted(p.name for p in work_dir.iterdir())
        if self.result is not None:
            (work_dir / "check.json").write_text(self.result)
        return SandboxRun(self.returncode, False, 0.1, "checked\n", 8, "scripted")


def _check(tmp_path: Path, sandbox: ScriptedSandbox):
    data = tmp_path / "states.npz"
    data.write_bytes(b"data")
    return run_reward_check(
        "rewardsmith.sandbox.smoke",
        ["1.0"],
        "def compute_reward(state, action, next_state): ...\n",
        tmp_path / "work",
        {"states.npz": data},
        "check.json",
        sandbox,
        Limits(),
        "smoke test on cartpole",
    )


def test_a_good_record_comes_back_and_the_input_copy_is_removed(tmp_path: Path) -> None:
    sandbox = ScriptedSandbox(json.dumps({"status": "ok", "calls_per_s": 10.0}))
    checked = _check(tmp_path, sandbox)
    assert checked.error is None and checked.record == {"status": "ok", "calls_per_s": 10.0}
    assert sandbox.seen == ["reward.py", "states.npz"]
    work = tmp_path / "work"
    assert not (work / "states.npz").exists() and (tmp_path / "states.npz").exists()
    assert (work / "smoke.log").read_text() == "checked\n"


def test_an_overwritten_result_is_an_error_not_a_crash(tmp_path: Path) -> None:
    for garbage in ("not json", "[1, 2]", '{"status": 3}'):
        checked = _check(tmp_path, ScriptedSandbox(garbage))
        assert checked.record is None and checked.error is not None
        assert checked.error.category is ErrorCategory.SANDBOX_DIED
        assert checked.error.message.startswith("smoke test on cartpole: ")


def test_no_result_is_classified_with_the_check_named(tmp_path: Path) -> None:
    checked = _check(tmp_path, ScriptedSandbox(None, returncode=1))
    assert checked.record is None and checked.error is not None
    assert checked.error.category is ErrorCategory.CRASHED
    assert checked.error.message == "smoke test on cartpole: the worker exited with status 1"
