"""The run store keeps a run readable and resumable through crashes, races and upgrades."""

from __future__ import annotations

import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from datetime import datetime, tzinfo
from pathlib import Path

import pytest

from rewardsmith.runs import SCHEMA_VERSION, RunStore, RunStoreError, store
from rewardsmith.runs import index as run_index
from rewardsmith.runs.atomic import read_json, write_bytes, write_json, write_text
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.schema import write_record

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"model": "gpt-4o", "rounds": 2, "samples": 4}


class FrozenDatetime(datetime):
    """Every run in a test starts in the same second."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> FrozenDatetime:
        return cls(2025, 1, 2, 3, 4, 5, tzinfo=tz)


def make_run(root: Path, task: str = "CartPole-v1") -> store.Run:
    return RunStore(root).create_run(task, CONFIG, ["rewardsmith", "run", task], seed=7)


def sql(path: Path, statement: str) -> object:
    """Run one statement on its own connection, as another process would."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        row = db.execute(statement).fetchone()
    return row[0] if row else None


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_atomic_writes_leave_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    write_json(target, {"a": 1, "path": tmp_path})
    write_text(tmp_path / "f.txt", "hello")
    write_bytes(tmp_path / "f.bin", b"\x00\x01")
    write_json(target, {"a": 2})

    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.bin", "f.json", "f.txt"]
    assert read_json(target) == {"a": 2}


def test_failed_rename_keeps_old_content_and_removes_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.txt"
    write_text(target, "old")

    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_text(target, "new")

    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_killed_before_rename_keeps_old_content(tmp_path: Path) -> None:
    target = tmp_path / "run.json"
    write_json(target, {"content": "old"})
    result = run_python(
        "import os, signal, sys\n"
        "from rewardsmith.runs.atomic import write_json\n"
        "os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)\n"
        f"write_json({str(target)!r}, {{'content': 'new'}})\n"
    )

    assert result.returncode == -signal.SIGKILL, result.stderr
    assert read_json(target) == {"content": "old"}
    (leftover,) = [p for p in tmp_path.iterdir() if p != target]
    assert leftover.name.startswith(".run.json.") and leftover.name.endswith(".tmp")


def test_every_record_carries_the_schema_version(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    run.set_status("finished")
    run.update_summary(best_fitness=1.5)
    records = [
        run.path / "run.json",
        run.candidate(CandidateKey(0, 1)).write("critique.json", {"ok": True}),
        run.write_round_file(0, "reflection.json", {"best": [0, 1]}),
        run.save_reply("r00-design-s00-abc123", {"content": "def compute_reward(): ..."}),
    ]

    for path in records:
        assert read_json(path)["schema_version"] == SCHEMA_VERSION, path
    assert run.candidate(CandidateKey(0, 1)).write("reward.py", "x = 1\n").read_text() == "x = 1\n"
    assert (
        run.path / "round_00" / "cand_01" / "reward.py"
        == run.candidate(CandidateKey(0, 1)).path / "reward.py"
    )


def test_run_json_records_what_reproduces_the_run(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    info = run.info()

    assert info["command"] == ["rewardsmith", "run", "CartPole-v1"]
    assert info["config"] == CONFIG
    assert info["model"] == "gpt-4o"
    assert info["seed"] == 7
    assert info["status"] == "running"
    assert {"rewardsmith", "python", "numpy"} <= set(info["packages"])
    assert info["process"]["pid"] == os.getpid()
    offline = RunStore(tmp_path).create_run("CartPole-v1", {}, ["rewardsmith", "run"], seed=None)
    assert offline.info()["model"] == "offline designer"


def test_newer_run_json_asks_to_upgrade(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    write_json(run.path / "run.json", {**read_json(run.path / "run.json"), "schema_version": 99})

    with pytest.raises(RunStoreError) as error:
        RunStore(tmp_path).open_run(run.run_id)
    message = str(error.value)
    assert "version 99" in message
    assert f"up to version {SCHEMA_VERSION}" in message
    assert "upgrade rewardsmith" in message


def test_newer_index_asks_to_upgrade(tmp_path: Path) -> None:
    with make_run(tmp_path) as run:
        sql(run.index_path, "PRAGMA user_version = 99")

    with pytest.raises(RunStoreError, match=r"version 99.*upgrade rewardsmith"):
        RunStore(tmp_path).open_run(run.run_id).candidates()


def test_missing_or_partial_run_is_a_clear_error(tmp_path: Path) -> None:
    runs = RunStore(tmp_path)
    (tmp_path / "20250102-030405-half-made-0000").mkdir()

    with pytest.raises(RunStoreError, match=r"is not a rewardsmith run \(no run.json\)"):
        runs.open_run("20250102-030405-half-made-0000")
    with pytest.raises(RunStoreError, match="does not exist"):
        runs.open_run(tmp_path / "nope")
    with pytest.raises(RunStoreError, match=r"no run in .* starting with 'nope'"):
        runs.open_run("nope")
    assert runs.list_runs() == []


def test_runs_started_in_the_same_second_get_distinct_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "datetime", FrozenDatetime)
    suffixes = iter(["beef", "beef", "cafe"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(suffixes))

    first, second = make_run(tmp_path), make_run(tmp_path)

    assert first.run_id == "20250102-030405-CartPole-v1-beef"
    assert second.run_id == "20250102-030405-CartPole-v1-cafe"


def test_concurrent_creates_never_share_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "datetime", FrozenDatetime)
    ids: list[str] = []
    threads = [
        threading.Thread(target=lambda: ids.append(make_run(tmp_path).run_id)) for _ in range(16)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(set(ids)) == 16
    assert len(RunStore(tmp_path).list_runs()) == 16


def test_open_run_by_id_prefix_or_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = RunStore(tmp_path)
    cartpole, pendulum = make_run(tmp_path), make_run(tmp_path, "Pendulum-v1")

    assert runs.open_run(cartpole.run_id).path == cartpole.path
    assert runs.open_run(cartpole.path).path == cartpole.path
    monkeypatch.chdir(tmp_path.parent)
    assert runs.open_run(f"{tmp_path.name}/{pendulum.run_id}").path.name == pendulum.run_id
    prefix = pendulum.run_id[: -len("-0000")]
    assert runs.open_run(prefix).run_id == pendulum.run_id
    with pytest.raises(RunStoreError, match=r"matches 2 runs.*give more of the id"):
        runs.open_run(cartpole.run_id[:8])


def test_concurrent_upserts_from_four_threads(tmp_path: Path) -> None:
    run = make_run(tmp_path)

    def work(worker: int) -> None:
        for i in range(25):
            run.upsert_candidate(worker, i, status="trained", fitness=float(i))
            run.upsert_candidate(worker, i, message=f"worker {worker}")
            run.record_llm_call(worker, "design", {"prompt_tokens": 10, "completion_tokens": 5})

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    rows = run.candidates()
    assert len(rows) == 100
    assert all(row["status"] == "trained" and row["message"] for row in rows)
    assert [row["idx"] for row in run.candidates(round=2)] == list(range(25))
    assert run.totals() == {"tokens": 1500, "cost_usd": 0.0, "calls": 100}


def test_llm_calls_are_logged(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    reply = run.save_reply("r01-design-s00-abc", {"content": "..."})
    call = {"prompt_hash": "abc", "model": "gpt-4o", "prompt_tokens": 100, "cost_usd": 0.25}
    run.record_llm_call(1, "design", {**call, "reply": "ignored"}, reply)

    (logged,) = run.llm_calls()
    assert logged["response_path"] == "llm/r01-design-s00-abc.json"
    assert logged["prompt_hash"] == "abc" and logged["completion_tokens"] is None
    assert run.totals() == {"tokens": 100, "cost_usd": 0.25, "calls": 1}
    with pytest.raises(ValueError, match="unknown candidate fields"):
        run.upsert_candidate(0, 0, fitnes=1.0)


def test_migrations_are_applied_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A migration that would fail if applied twice (the table exists the second time).
    marker = ("CREATE TABLE migrated (n INTEGER)", "INSERT INTO migrated VALUES (1)")
    monkeypatch.setattr(run_index, "MIGRATIONS", [*run_index.MIGRATIONS, marker])
    run = make_run(tmp_path)

    for _ in range(3):
        with store.Run(run.path) as reopened:
            assert reopened.candidates() == []
    assert sql(run.index_path, "SELECT count(*) FROM migrated") == 1
    assert sql(run.index_path, "PRAGMA user_version") == len(run_index.MIGRATIONS)
    assert sql(run.index_path, "PRAGMA journal_mode") == "wal"


def test_reply_cache_round_trip(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    reply = {"content": "def compute_reward(s, a, n): ...", "usage": {"prompt_tokens": 3}}

    assert run.load_reply("r01-design-s03-deadbeef") is None
    run.save_reply("r01-design-s03-deadbeef", reply)

    assert store.Run(run.path).load_reply("r01-design-s03-deadbeef") == reply
    with pytest.raises(ValueError, match="not a plain file name"):
        run.save_reply("../escape", reply)


def test_run_of_a_dead_process_shows_as_interrupted(tmp_path: Path) -> None:
    result = run_python(
        "from pathlib import Path\n"
        "from rewardsmith.runs import RunStore\n"
        f"RunStore(Path({str(tmp_path)!r})).create_run('CartPole-v1', {{}}, ['x'], seed=0)\n"
    )
    assert result.returncode == 0, result.stderr

    (summary,) = RunStore(tmp_path).list_runs()
    assert summary.status == "interrupted"
    run = RunStore(tmp_path).open_run(summary.run_id)
    run.set_status("running")  # resumed by this process
    assert run.status() == "running"


def test_reused_pid_shows_as_interrupted(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    assert run.status() == "running"
    info = run.info()
    info["process"]["start_time"] -= 1  # same pid, a different (earlier) process
    write_record(run.path / "run.json", info)

    assert run.status() == "interrupted"


def test_listing_shows_status_and_summary(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    run.update_summary(rounds_done=2, best_fitness=480.0, cost_usd=0.12)
    run.update_summary(human_normalized_score=1.1)
    run.set_status("finished", finished_at="now")

    (summary,) = RunStore(tmp_path).list_runs()
    assert (summary.task, summary.model, summary.status) == ("CartPole-v1", "gpt-4o", "finished")
    assert (summary.rounds_done, summary.best_fitness, summary.cost_usd) == (2, 480.0, 0.12)
    assert summary.human_normalized_score == 1.1
    assert run.info()["finished_at"] == "now"


def test_a_run_opened_through_a_relative_runs_dir_can_be_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rewardsmith show RUN` with the default `--runs-dir runs` opened the read-only index
    through a file URI of a relative path, which failed ("relative path can't be expressed as
    a file URI")."""
    from rewardsmith.runs.views import open_view

    monkeypatch.chdir(tmp_path)
    run = RunStore(Path("runs")).create_run("cartpole", {}, ["test"], seed=0)
    run.upsert_candidate(0, 0, status="trained", fitness=1.0)
    run.close()
    view = open_view(run.run_id, Path("runs"))
    assert view.path == tmp_path / "runs" / run.run_id
    assert [c.fitness for c in view.candidates] == [1.0]
