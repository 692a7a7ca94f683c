"""Whatever a sandboxed process leaves in its directory, the orchestrator survives it.

Each attack runs on every backend (the `sandbox` fixture), two ways where both apply: from a reward
(the code the LLM wrote, which today still shares the worker's process and its directory) and from
a fake worker program (`hostile.Impostor`: the real sandbox runs `tests/sandbox/hostile.py` in
place of the worker, the smoke test, the scorer or the evaluator), so the tests keep their point
once the reward no longer can write the job directory: whoever wrote it, the orchestrator never
writes through a link planted there, never reads a host file through one, never blocks on a FIFO,
never reads more than a cap, and turns a garbled record into a named error.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rewardsmith.atomic import SCHEMA_VERSION
from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs import training
from rewardsmith.jobs.score import score_bank
from rewardsmith.jobs.smoke import smoke_test
from rewardsmith.jobs.training import TrainOutcome, make_job, train_reward
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox.backends import live_check
from rewardsmith.sandbox.runner import classify_failure, run_job
from rewardsmith.sandbox.types import Limits, Sandbox, SandboxRun
from tests.sandbox.hostile import Impostor, as_reward

E = ErrorCategory
BAD = "bad_worker_output"  # ErrorCategory.BAD_WORKER_OUTPUT, spelled so the test runs on old code
LIMITS = Limits(wall_s=20, memory_mb=2048, processes=64, output_bytes=64_000)
ESCAPE = (
    'import typing\nimport numpy as np\nimp = vars(getattr(typing, "s" + "ys"))["mod" + "ules"]'
    "['importlib'].import_module\n"
)
WORKER = "rewardsmith.programs.train_sb3"
SECRET = "SECRET-" + "5e3b9a0c7d21"
HOST_TEXT = "# a .pth file: the next rewardsmith process runs this line\n"
STEPS = 256
V = {"schema_version": SCHEMA_VERSION}  # the workers' records are versioned, as all of a run's
OK = json.dumps({**V, "status": "ok", "steps": STEPS})
FAILED = json.dumps(
    {**V, "status": "error", "category": "runtime_error", "message": "fake failure"}
)
CHECKPOINT = {
    "step": 128,
    "fitness": 9.0,
    "fitness_std": 0.0,
    "fitness_per_episode": [9.0, 9.0],
    "success_rate": None,
    "episode_length": 9.0,
    "terminated_rate": 1.0,
    "reward_return": 9.0,
    "components": {"alive": 9.0},
}


@pytest.fixture
def host_file(tmp_path: Path) -> Path:
    """Stands for a file the orchestrator's user can write and the worker cannot: the venv's .pth."""
    path = tmp_path / "venv" / "site-packages" / "evil.pth"
    path.parent.mkdir(parents=True)
    path.write_text(HOST_TEXT)
    return path


def root_only(tmp_path: Path, text: str) -> Path:
    """A host file only root may read, outside every sandbox."""
    folder = tmp_path / "root-only"
    folder.mkdir(exist_ok=True)
    path = folder / "secret"
    path.write_text(text)
    path.chmod(0o600)
    return path


def train_with(
    cartpole: TaskAdapter,
    sandbox: Sandbox,
    tmp_path: Path,
    fakes: dict[str, tuple[list[list[str]], float]],
    limits: Limits = LIMITS,
    on_progress: Callable[[int, int], None] | None = None,
) -> TrainOutcome:
    job = make_job(cartpole, steps=STEPS, seed=0)
    job.eval_episodes, job.n_checkpoints = 2, 2
    impostor = Impostor(sandbox, fakes, tmp_path / "hostile")
    source = "import numpy as np\n\n\ndef compute_reward(state, action, next_state):\n    ...\n"
    return train_reward(cartpole, job, source, tmp_path / "cand", impostor, limits, on_progress)


def named(outcome: object, category: ErrorCategory | str, *says: str) -> RewardError:
    error = outcome.error  # type: ignore[attr-defined]
    assert error is not None, f"expected {category}, but it passed"
    assert error.category == category, f"{error}\n{error.traceback}"
    for text in says:
        assert text in error.message, error.message
    return error


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- (1) the orchestrator never writes through a link planted in a worker's directory ----------


CHECKS = {
    "smoke": ("smoke.log", "states.npz", "rewardsmith.programs.smoke"),
    "score": ("score.log", "bank.npz", "rewardsmith.programs.score"),
}


@pytest.mark.parametrize("via", ["reward", "fake-program"])
@pytest.mark.parametrize("check", sorted(CHECKS))
@pytest.mark.slow
def test_links_planted_for_the_logs_and_inputs_are_never_written_through(
    cartpole: TaskAdapter,
    sandbox: Sandbox,
    states: Path,
    tmp_path: Path,
    host_file: Path,
    check: str,
    via: str,
) -> None:
    """The first candidate plants links named like the old log, the reward and the input copy;
    neither its own check nor the next candidate's in the same folder may write the host file."""
    log, data, module = CHECKS[check]
    plants = [[name, "symlink", str(host_file)] for name in (log, "reward.py", data)]
    fakes = {module: (plants, 0.0)} if via == "fake-program" else {}
    runner = Impostor(sandbox, fakes, tmp_path / "hostile")
    hostile = as_reward(plants, ESCAPE)
    good = cartpole.reward_source("human")  # type: ignore[attr-defined]
    work_dir = tmp_path / "cand" / check
    for source in (hostile, good):  # the second is the next candidate, in the same folder
        if check == "smoke":
            smoke_test(cartpole, source, work_dir, states, runner, LIMITS)
        else:
            score_bank(source, work_dir, states, runner, LIMITS)
        assert host_file.read_text() == HOST_TEXT
        assert not host_file.is_symlink()


# --- (2) worker files: links, FIFOs, huge files, garbled records -------------------------------


SECRETS = {
    "result.json": json.dumps(
        {**V, "status": "error", "category": "runtime_error", "message": SECRET}
    ),
    "metrics.jsonl": json.dumps({**CHECKPOINT, "components": {SECRET: 1.0}}) + "\n",
    "progress.json": json.dumps({**V, "steps": 424242, "total": 424242, "note": SECRET}),
}


@pytest.mark.parametrize("name", sorted(SECRETS))
@pytest.mark.slow
def test_a_link_to_a_host_file_is_never_read(
    cartpole: TaskAdapter, sandbox: Sandbox, tmp_path: Path, name: str
) -> None:
    secret = root_only(tmp_path, SECRETS[name])
    plants = [[name, "symlink", str(secret)]]
    if name == "metrics.jsonl":
        plants.append(["result.json", "text", OK])
    elif name == "progress.json":
        plants.append(["result.json", "text", FAILED])
    seen: list[int] = []
    outcome = train_with(
        cartpole,
        sandbox,
        tmp_path,
        {WORKER: (plants, 1.5 if name == "progress.json" else 0.0)},
        on_progress=lambda done, total: seen.append(done),
    )
    assert SECRET not in json.dumps(outcome.to_dict()) and 424242 not in seen
    if name == "progress.json":
        named(outcome, E.RUNTIME_ERROR, "fake failure")
    else:
        named(outcome, BAD, name, "link")


@pytest.mark.timeout(90)
@pytest.mark.parametrize("name", ["metrics.jsonl", "progress.json", "result.json"])
@pytest.mark.slow
def test_a_fifo_never_blocks_the_orchestrator(
    cartpole: TaskAdapter, sandbox: Sandbox, tmp_path: Path, name: str
) -> None:
    """A FIFO in place of progress.json used to block the poll, so the wall clock never ran out."""
    limits = Limits(wall_s=5, memory_mb=2048, processes=64, output_bytes=64_000)
    plants = [[name, "fifo", ""]]
    if name == "metrics.jsonl":
        plants.append(["result.json", "text", OK])
    alive_s = 60.0 if name == "progress.json" else 0.0  # a worker still training
    began = time.monotonic()
    outcome = train_with(
        cartpole,
        sandbox,
        tmp_path,
        {WORKER: (plants, alive_s)},
        limits,
        on_progress=lambda done, total: None,
    )
    assert time.monotonic() - began < limits.wall_s + 10
    if name == "progress.json":
        named(outcome, E.TIMEOUT, "wall-clock")
    else:
        named(outcome, BAD, name, "FIFO")


@pytest.mark.parametrize("name", ["metrics.jsonl", "result.json"])
def test_a_huge_file_costs_the_orchestrator_no_memory(
    cartpole: TaskAdapter, sandbox: Sandbox, tmp_path: Path, name: str
) -> None:
    line = json.dumps(CHECKPOINT) if name == "metrics.jsonl" else OK
    plants = [[name, "big", line]]
    if name == "metrics.jsonl":
        plants.append(["result.json", "text", OK])
    before = peak_rss_mb()
    outcome = train_with(cartpole, sandbox, tmp_path, {WORKER: (plants, 0.0)})
    growth = peak_rss_mb() - before
    assert growth < 100, f"the orchestrator grew by {growth:.0f} MB"
    named(outcome, BAD, name, "larger than")


GARBLED_RESULTS = {
    "steps-many": '{"schema_version": 1, "status": "ok", "steps": "many"}',
    "steps-negative": '{"schema_version": 1, "status": "ok", "steps": -1}',
    "unknown-category": '{"schema_version": 1, "status": "error", "category": "pwned", "message": "x"}',
    "message-not-text": '{"schema_version": 1, "status": "error", "category": "runtime_error", "message": 5}',
    "not-an-object": "[1, 2]",
    "not-json": "{'status': 'ok'}",
    "deep": "[" * 100_000,
    "unversioned": '{"status": "ok", "steps": 256}',
    "newer-version": '{"schema_version": 99, "status": "ok", "steps": 256}',
}


@pytest.mark.parametrize("record", [*sorted(GARBLED_RESULTS), "not-utf8"])
def test_a_garbled_result_is_a_named_error(
    cartpole: TaskAdapter, sandbox: Sandbox, tmp_path: Path, record: str
) -> None:
    if record == "not-utf8":
        plant = ["result.json", "hex", b'{"status": "ok", "steps": 1, "x": "\xff"}'.hex()]
    else:
        plant = ["result.json", "text", GARBLED_RESULTS[record]]
    outcome = train_with(cartpole, sandbox, tmp_path, {WORKER: ([plant], 0.0)})
    named(outcome, BAD, "result.json")


def test_text_from_a_worker_can_always_be_stored_and_printed(
    cartpole: TaskAdapter, sandbox: Sandbox, tmp_path: Path
) -> None:
    """A lone surrogate (valid JSON, not encodable) is replaced, not a crash when stored."""
    record = '{"schema_version": 1, "status": "error", "category": "runtime_error", "message": "bad \\ud800 text"}'
    outcome = train_with(
        cartpole, sandbox, tmp_path, {WORKER: ([["result.json", "text", record]], 0.0)}
    )
    error = named(outcome, E.RUNTIME_ERROR, "bad ")
    json.dumps(outcome.to_dict(), ensure_ascii=False).encode("utf-8")
    assert error.message.encode("utf-8")


def test_a_garbled_checkpoint_is_a_named_error(
    cartpole: TaskAdapter, sandbox: Sandbox, tmp_path: Path
) -> None:
    bad = json.dumps({**CHECKPOINT, "step": "many", "components": {"alive": "lots"}})
    plants = [["metrics.jsonl", "text", bad + "\n"], ["result.json", "text", OK]]
    outcome = train_with(cartpole, sandbox, tmp_path, {WORKER: (plants, 0.0)})
    named(outcome, BAD, "metrics.jsonl")
    assert outcome.checkpoints == []


def test_a_forged_evaluation_is_a_named_error(
    cartpole: TaskAdapter, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The evaluator's record is checked too: a string fitness never reaches selection."""
    forged = json.dumps({**V, "fitness": "500", "success_rate": None, "fitness_per_episode": "all"})
    fakes = {
        WORKER: ([["result.json", "text", OK]], 0.0),
        "rewardsmith.programs.evaluate_sb3": ([["evaluation.json", "text", forged]], 0.0),
    }
    outcome = train_with(cartpole, sandbox, tmp_path, fakes)
    named(outcome, BAD, "evaluation.json")
    assert not outcome.ok and outcome.fitness is None


@pytest.mark.parametrize(
    "record",
    [
        '{"schema_version": 1, "status": "error", "error": {"category": "pwned", "message": "x"}}',
        '{"schema_version": 1, "status": "error", "error": "boom"}',
        '{"schema_version": 1, "status": "ok", "warnings": "not a list", "calls_per_s": 10.0}',
        '{"schema_version": 1, "status": "ok", "warnings": [], "calls_per_s": "fast"}',
    ],
)
@pytest.mark.slow
def test_a_garbled_smoke_record_is_a_named_error(
    cartpole: TaskAdapter, sandbox: Sandbox, states: Path, tmp_path: Path, record: str
) -> None:
    fakes = {"rewardsmith.programs.smoke": ([["smoke.json", "text", record]], 0.0)}
    runner = Impostor(sandbox, fakes, tmp_path / "hostile")
    report = smoke_test(cartpole, "...", tmp_path / "cand" / "smoke", states, runner, LIMITS)
    named(report, BAD, "smoke.json")


@pytest.mark.parametrize(
    "record",
    [
        {"returns": [1.0], "discounted": [1.0], "per_step": [1.0], "components": {}},
        {"returns": ["a"] * 4, "discounted": [1.0] * 4, "per_step": [1.0] * 4, "components": {}},
        {"returns": [1.0] * 4, "discounted": [1.0] * 4, "per_step": [1.0] * 4, "components": []},
        {
            "returns": [1.0] * 4,
            "discounted": [1.0] * 4,
            "per_step": [1.0] * 4,
            "components": {"c": [1.0]},
        },
    ],
    ids=["short", "not-numbers", "components-not-a-dict", "short-component"],
)
def test_a_garbled_bank_score_is_a_named_error(
    cartpole: TaskAdapter, sandbox: Sandbox, states: Path, tmp_path: Path, record: dict[str, object]
) -> None:
    """The scores must be numbers, one per bank episode (the states file holds 4)."""
    text = json.dumps({**V, "status": "ok", **record})
    fakes = {"rewardsmith.programs.score": ([["score.json", "text", text]], 0.0)}
    runner = Impostor(sandbox, fakes, tmp_path / "hostile")
    scores = score_bank("...", tmp_path / "cand" / "preference", states, runner, LIMITS)
    named(scores, BAD, "score.json")


def test_a_good_fake_record_still_passes(
    cartpole: TaskAdapter, sandbox: Sandbox, states: Path, tmp_path: Path
) -> None:
    """The checks refuse bad records, not good ones: a well-formed score is returned as written."""
    record = {
        **V,
        "status": "ok",
        "returns": [1.0, 2.0, 3.0, 4.0],
        "discounted": [1.0, 2.0, 3.0, 4.0],
        "per_step": [0.5] * 4,
        "components": {"alive": [1.0, 2.0, 3.0, 4.0]},
    }
    fakes = {"rewardsmith.programs.score": ([["score.json", "text", json.dumps(record)]], 0.0)}
    runner = Impostor(sandbox, fakes, tmp_path / "hostile")
    scores = score_bank("...", tmp_path / "cand" / "preference", states, runner, LIMITS)
    assert scores.ok, scores.error
    assert scores.returns == record["returns"] and scores.components == record["components"]
    assert os.path.exists(tmp_path / "cand" / "logs" / "score.log")


# --- run_job itself ------------------------------------------------------------------------------


class Scripted:
    """A stand-in sandbox: calls `on_poll` once, then `script(workdir)`; exit status 0."""

    name = "scripted"

    def __init__(self, script: Callable[[Path], None] = lambda workdir: None) -> None:
        self.script = script
        self.writable: list[Path] = []

    def run(self, module, args, writable, limits, on_poll=None, readable=None) -> SandboxRun:  # type: ignore[no-untyped-def]
        self.writable = writable
        if on_poll is not None:
            on_poll()
        self.script(writable[0])
        return SandboxRun(0, False, 0.01, "out\n", 4, "scripted")


def test_the_log_may_not_live_where_the_program_writes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must not be inside"):
        run_job(
            Scripted(),
            "m",
            [],
            workdir=tmp_path / "work",
            inputs={},
            limits=LIMITS,
            log_path=tmp_path / "work" / "m.log",
        )


def test_the_workdir_is_fresh_even_when_a_link_took_its_name(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("mine")
    (tmp_path / "work").symlink_to(target)
    sandbox = Scripted()
    done = run_job(
        sandbox,
        "m",
        [],
        workdir=tmp_path / "work",
        inputs={"reward.py": "x = 1\n", "data.bin": b"\x00"},
        limits=LIMITS,
        log_path=tmp_path / "logs" / "m.log",
    )
    work = tmp_path / "work"
    assert not work.is_symlink() and sorted(p.name for p in work.iterdir()) == [
        "data.bin",
        "reward.py",
    ]
    assert (target / "keep").read_text() == "mine" and sandbox.writable == [work]
    assert (tmp_path / "logs" / "m.log").read_text() == "out\n" and done.error is None


def test_a_cancel_from_the_poll_stops_the_job(tmp_path: Path) -> None:
    class Cancelled(Exception):
        pass

    def poll() -> None:
        raise Cancelled()

    with pytest.raises(Cancelled):
        run_job(
            Scripted(),
            "m",
            [],
            workdir=tmp_path / "work",
            inputs={},
            limits=LIMITS,
            log_path=None,
            on_poll=poll,
        )


def test_the_job_file_is_written_atomically_and_never_through_a_link(tmp_path: Path) -> None:
    host = tmp_path / "host.pth"
    host.write_text(HOST_TEXT)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.json").symlink_to(host)
    job = make_job(load_task("cartpole"), steps=STEPS, seed=0)
    job.write(job_dir)
    assert host.read_text() == HOST_TEXT and not (job_dir / "job.json").is_symlink()
    assert TrainJob.read(job_dir) == job
    assert sorted(p.name for p in job_dir.iterdir()) == ["job.json"]  # no temp file left


def test_one_classifier_for_every_job() -> None:
    assert training.classify_failure is classify_failure
    run = SandboxRun(None, True, 9.0, "", 0, "process")
    error = classify_failure(run, LIMITS, "smoke test on cartpole")
    assert error.category is E.TIMEOUT
    assert error.message.startswith("smoke test on cartpole: ") and "wall-clock" in error.message


def test_the_doctor_probe_runs_through_the_runner(sandbox: Sandbox) -> None:
    seen = live_check(sandbox)
    assert seen["ok"], seen
