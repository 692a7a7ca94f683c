"""One real run of the evolution loop, shared by the tests that look at runs.

The run is made once per test session (the first test module that asks for it pays ~15 s) by
the real loop: scripted LLM replies from a server on 127.0.0.1, sandboxed PPO training with a
tiny budget, and the final evaluation. Under pytest-xdist the workers share it: the first to
ask makes it in the session's common temporary folder, under a file lock, and the others wait
for it and read it. Tests must treat it as read-only: copy it to change it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.store import RunStore
from tests.eureka_loop.rewards import GOOD_ALIVE, GOOD_UPRIGHT, NO_CODE, SYNTAX_ERROR
from tests.llm_fixtures import block_remote_network
from tests.llm_server import ScriptedLLMServer

# Round 0: one good reward and one the critic rejects; round 1: one good reward and a reply
# without code. The K calls of a round run concurrently, so which candidate gets which reply
# within a round is not fixed.
SCRIPT = [GOOD_UPRIGHT, SYNTAX_ERROR, GOOD_ALIVE, NO_CODE]

EXPECTED_FATES = [
    (0, "rejected", "syntax_error"),
    (0, "trained", None),
    (1, "rejected", "extract_error"),
    (1, "trained", None),
]

_made: dict[str, Path] = {}


def recorded_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory of the shared run (made on first use), inside its own runs directory."""
    if "run" not in _made:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            # The workers' temporary folders share a parent for the session.
            common = tmp_path_factory.getbasetemp().parent / "recorded_run"
            common.mkdir(exist_ok=True)
            made = common / "run_dir"
            with FileLock(common / "lock"):
                if not made.is_file():
                    made.write_text(str(_record(common / "runs")))
            _made["run"] = Path(made.read_text())
        else:
            _made["run"] = _record(tmp_path_factory.mktemp("recorded_runs"))
    return _made["run"]


def _record(runs_dir: Path) -> Path:
    """Run the loop once into `runs_dir` and check the run has the shape the tests rely on."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as mp, ScriptedLLMServer(SCRIPT) as server:
        block_remote_network(mp)
        config = LoopConfig(
            task_id="cartpole",
            model=server.model,
            api_base=server.base_url,
            rounds=2,
            samples=2,
            steps=1_500,
            parallel=2,
            eval_seeds=1,
            sandbox="process",
        )
        result = start_run(config, runs_dir, command=["rewardsmith", "run", "cartpole"])
    run_dir = Path(result["run_dir"])
    with RunStore(runs_dir).open_run(run_dir) as run:
        fates = sorted((c["round"], c["status"], c["category"]) for c in run.candidates())
    # The tests rely on this shape; if the loop changes it, say so here, not in every test.
    assert fates == EXPECTED_FATES, f"the loop made an unexpected run: {fates}"
    return run_dir


def copy_run(run_dir: Path, runs_dir: Path) -> Path:
    """A copy of a run under `runs_dir`, to damage or change in a test."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    skip = shutil.ignore_patterns("job", "eval", "smoke")  # training scratch, not the record
    return Path(shutil.copytree(run_dir, runs_dir / run_dir.name, ignore=skip))
