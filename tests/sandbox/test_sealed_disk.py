"""Reward code in a check program can create no file: a hard disk cap, not a polled one.

The smoke test, the bank scorer and the JAX tracer open their outputs, then seal the disk with a
read-only Landlock layer (`programs.sealed_outputs`) before they load the reward. Stops the attack
in which a reward fills the disk from a check program faster than the runner's polls see it (6 GB
and 40,000 files in under a second were measured before the polled cap, and 187-452 MB past a
20 MB cap with it). On the old code each reward below passed its check with its file written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.score import score_bank
from rewardsmith.jobs.smoke import smoke_test
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.sandbox.landlock import landlock_abi
from rewardsmith.sandbox.types import Limits, Sandbox
from rewardsmith.sandbox.worker_files import MissingWorkerFile, read_record
from tests.sandbox.hostile import as_reward

pytestmark = pytest.mark.skipif(landlock_abi() < 1, reason="no Landlock on this kernel")

ESCAPE = (
    'import typing\nimport numpy as np\nimp = vars(getattr(typing, "s" + "ys"))["mod" + "ules"]'
    "['importlib'].import_module\n"
)
ONE_SMALL_FILE = as_reward([["note.txt", "text", "x"]], ESCAPE)
LIMITS = Limits(wall_s=60, memory_mb=2048, processes=64, output_bytes=64_000)


def refused(job: object) -> None:
    error = job.error  # type: ignore[attr-defined]
    assert error is not None, "the reward wrote a file from a check program"
    assert error.category is ErrorCategory.RUNTIME_ERROR
    assert "PermissionError" in error.message and "note.txt" in error.message, error.message


def test_the_smoke_test_refuses_a_reward_any_file(
    cartpole: TaskAdapter, states: Path, tmp_path: Path, sandbox: Sandbox
) -> None:
    refused(smoke_test(cartpole, ONE_SMALL_FILE, tmp_path / "smoke", states, sandbox, LIMITS))


def test_bank_scoring_refuses_a_reward_any_file(
    states: Path, tmp_path: Path, sandbox: Sandbox
) -> None:
    refused(score_bank(ONE_SMALL_FILE, tmp_path / "preference", states, sandbox, LIMITS))


def test_the_jax_trace_refuses_a_reward_any_file(states: Path, tmp_path: Path) -> None:
    pytest.importorskip("jax")
    from rewardsmith.jobs.trace_jax import trace_reward
    from rewardsmith.sandbox.executor import ProcessSandbox

    work = tmp_path / "cand" / "trace"
    report = trace_reward(
        "cartpole", ONE_SMALL_FILE, work, states, ProcessSandbox(), LIMITS, tmp_path / "t.log"
    )
    refused(report)


SEALED_PROGRAM = """\
import os, sys
from pathlib import Path
from rewardsmith.programs.sealed_outputs import SealedOutputs
work = Path(sys.argv[1])
outputs = SealedOutputs(work, "out.json", "never.json")
try:
    open(work / "other.txt", "w")
    other = "written"
except PermissionError:
    other = "refused"
try:
    os.mkdir(work / "folder")
    folder = "made"
except PermissionError:
    folder = "refused"
outputs.write_record("out.json", {"other": other, "folder": folder})
if sys.argv[2] == "die":
    os._exit(3)
"""


@pytest.mark.parametrize("end", ["write", "die"])
def test_a_sealed_program_writes_its_opened_outputs_and_nothing_else(
    tmp_path: Path, end: str
) -> None:
    run = subprocess.run(
        [sys.executable, "-c", SEALED_PROGRAM, str(tmp_path), end], capture_output=True, text=True
    )
    assert run.returncode == (0 if end == "write" else 3), run.stderr
    record = read_record(tmp_path, "out.json", 10_000)
    assert record == {"other": "refused", "folder": "refused"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["never.json", "out.json"]
    with pytest.raises(MissingWorkerFile, match="empty"):  # opened, never written: missing
        read_record(tmp_path, "never.json", 10_000)
    assert json.loads((tmp_path / "out.json").read_text())["schema_version"] >= 1
