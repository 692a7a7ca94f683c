"""Reading a sandboxed program's files: only regular files, never blocking, capped, schema-checked.

These need no sandbox: the files are planted directly, as any sandboxed process could plant them
(the end-to-end versions, through every backend, are in test_runner.py).
"""

from __future__ import annotations

import json
import os
import resource
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.bank import TrajectoryBank
from rewardsmith.jobs.records import (
    BadRecord,
    check_checkpoint,
    check_result,
    check_trajectories,
    read_checkpoints,
    read_progress,
    read_trajectories,
)
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.rl.rollout import random_policy, rollout_episodes, summarize
from rewardsmith.rl.trajectories import save_episodes
from rewardsmith.sandbox.worker_files import (
    MissingWorkerFile,
    WorkerFileError,
    read_bytes,
    read_json,
    read_json_lines,
    read_npz,
)

SECRET = "SECRET-" + "0b9d27c4"


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """`call()`, failing the test (instead of hanging it) if it blocks."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"blocked for more than {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def refused(call: Callable[[], Any], *says: str) -> WorkerFileError:
    with pytest.raises(WorkerFileError) as info:
        within(5, call)
    for text in says:
        assert text in str(info.value), str(info.value)
    return info.value


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "job"
    folder.mkdir()
    return folder


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"steps": 7, "secret": SECRET}))
    path.chmod(0o600)
    return path


# --- the reader --------------------------------------------------------------------------------


def test_a_regular_file_is_read(work: Path) -> None:
    (work / "result.json").write_text('{"status": "ok", "steps": 3}')
    assert read_json(work, "result.json", 100) == {"status": "ok", "steps": 3}
    (work / "sub").mkdir()
    (work / "sub" / "a.txt").write_bytes(b"hello")
    assert read_bytes(work, "sub/a.txt", 5) == b"hello"


def test_a_link_is_never_followed(work: Path, secret: Path, tmp_path: Path) -> None:
    (work / "result.json").symlink_to(secret)
    error = refused(lambda: read_bytes(work, "result.json", 1000), "result.json", "symbolic link")
    assert SECRET not in str(error)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "result.json").write_text("{}")
    (work / "sub").symlink_to(elsewhere)  # a link in the middle of the path
    refused(lambda: read_bytes(work, "sub/result.json", 1000), "symbolic link")
    linked_dir = tmp_path / "linked"
    linked_dir.symlink_to(elsewhere)  # the directory itself
    refused(lambda: read_bytes(linked_dir, "result.json", 1000), "symbolic link")


def test_a_hard_link_is_refused(work: Path, secret: Path) -> None:
    os.link(secret, work / "result.json")
    refused(lambda: read_bytes(work, "result.json", 1000), "hard links")


def test_a_fifo_socket_or_device_fails_at_once(work: Path) -> None:
    os.mkfifo(work / "progress.json")
    refused(lambda: read_bytes(work, "progress.json", 100), "FIFO")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(work / "result.json"))
        refused(lambda: read_bytes(work, "result.json", 100), "socket")
    (work / "dir").mkdir()
    refused(lambda: read_bytes(work, "dir", 100), "directory")
    if os.geteuid() == 0:
        os.mknod(work / "dev", 0o600 | 0o020000, os.makedev(1, 3))  # a /dev/null
        refused(lambda: read_bytes(work, "dev", 100), "character device")


def test_a_huge_file_is_refused_before_it_is_read(work: Path) -> None:
    with (work / "metrics.jsonl").open("wb") as handle:
        handle.truncate(100 * 1024 * 1024)  # sparse: costs no disk
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    refused(lambda: read_bytes(work, "metrics.jsonl", 4096), "larger than the 4096-byte cap")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 10 * 1024


def test_missing_is_its_own_error(work: Path, tmp_path: Path) -> None:
    with pytest.raises(MissingWorkerFile):
        read_bytes(work, "result.json", 10)
    with pytest.raises(MissingWorkerFile):
        read_bytes(tmp_path / "nowhere", "result.json", 10)
    for name in ("/etc/passwd", "../secret.json", ""):
        refused(lambda name=name: read_bytes(work, name, 10), "plain relative")


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"a": "\xff"}', "UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
        (b"9" * 5000, "not valid JSON"),
        (b"{'a': 1}", "not valid JSON"),
    ],
    ids=["not-utf8", "deep", "huge-int", "not-json"],
)
def test_bad_json_is_a_named_error(work: Path, content: bytes, says: str) -> None:
    (work / "result.json").write_bytes(content)
    refused(lambda: read_json(work, "result.json", 1 << 20), "result.json", says)


def test_json_lines_stop_at_a_line_cut_off(work: Path) -> None:
    (work / "metrics.jsonl").write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b"')
    values, note = read_json_lines(work, "metrics.jsonl", 1000)
    assert values == [{"a": 1}, {"a": 2}] and note is not None and "line 3" in note


def test_npz_is_read_without_pickles_or_bombs(work: Path) -> None:
    np.savez(work / "ok.npz", a=np.arange(3))
    assert read_npz(work, "ok.npz", 1 << 20, 1 << 20)["a"].tolist() == [0, 1, 2]
    np.savez(work / "pickle.npz", a=np.array([{"x": 1}], dtype=object))
    refused(lambda: read_npz(work, "pickle.npz", 1 << 20, 1 << 20), "not a readable .npz")
    np.savez_compressed(work / "bomb.npz", a=np.zeros(50_000_000, dtype=np.uint8))
    assert (work / "bomb.npz").stat().st_size < 1 << 20
    refused(lambda: read_npz(work, "bomb.npz", 1 << 20, 1 << 20), "expands to")
    (work / "junk.npz").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    refused(lambda: read_npz(work, "junk.npz", 1 << 20, 1 << 20), "not a readable .npz")


# --- the schemas -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record",
    [
        {"status": "ok", "steps": "many"},
        {"status": "ok", "steps": True},
        {"status": "ok", "steps": -5},
        {"status": "ok"},
        {"status": "fine", "steps": 1},
        {"status": "error", "category": "pwned", "message": "x"},
        {"status": "error", "category": "runtime_error"},
        {"status": "error", "category": "runtime_error", "message": "x", "step": "5"},
        {"status": "error", "category": ["runtime_error"], "message": "x"},
        [1, 2],
        None,
    ],
)
def test_a_bad_result_breaks_its_schema(record: Any) -> None:
    with pytest.raises(BadRecord):
        check_result(record)


def test_a_good_result_passes() -> None:
    assert check_result({"status": "ok", "steps": 256, "extra": 1}).steps == 256
    error = RewardError(ErrorCategory.NONFINITE_REWARD, "nan", step=5, component="upright")
    assert check_result({"status": "error", **error.to_dict()}).error == error


@pytest.mark.parametrize(
    "data",
    [
        None,
        "boom",
        [],
        {},
        {"category": None, "message": "x"},
        {"category": {"a": 1}, "message": "x"},
        {"category": "runtime_error", "message": 5},
        {"category": "runtime_error", "message": "x", "traceback": ["a"]},
        {"category": "runtime_error", "message": "x", "line": 1.5},
        {"category": "runtime_error", "message": "x", "column": False},
    ],
)
def test_from_dict_on_untrusted_data_raises_only_the_named_error(data: Any) -> None:
    with pytest.raises(RewardError) as info:
        RewardError.from_dict(data)
    assert info.value.category is ErrorCategory.BAD_WORKER_OUTPUT


def test_from_dict_caps_and_cleans_text() -> None:
    error = RewardError.from_dict(
        {"category": "runtime_error", "message": "m" * 10_000 + "\ud800", "traceback": "t" * 50_000}
    )
    assert len(error.message) <= 4000 and error.message.endswith("…")
    assert error.traceback is not None and len(error.traceback) <= 20_000
    clean = RewardError.from_dict({"category": "runtime_error", "message": "lone \ud800"})
    assert clean.message.encode("utf-8") == b"lone ?"


def checkpoint() -> dict[str, Any]:
    adapter = load_task("cartpole")
    episodes = rollout_episodes(adapter, random_policy(adapter, 0), 2, 0)
    return {
        "step": 128,
        **summarize(adapter, episodes),
        "reward_return": 9.0,
        "components": {"alive": 9.0},
    }


def test_a_real_checkpoint_passes_unchanged() -> None:
    record = checkpoint()
    assert check_checkpoint(json.loads(json.dumps(record))) == record


@pytest.mark.parametrize(
    "change",
    [
        {"step": "many"},
        {"fitness": float("nan")},
        {"fitness": "9"},
        {"success_rate": 2.0},
        {"fitness_per_episode": "all"},
        {"fitness_per_episode": [1.0, None]},
        {"components": {"alive": "lots"}},
        {"components": [1.0]},
        {"components": {f"c{i}": 1.0 for i in range(1000)}},
        {"components": {"x" * 500: 1.0}},
    ],
)
def test_a_bad_checkpoint_breaks_its_schema(change: dict[str, Any]) -> None:
    with pytest.raises(BadRecord):
        check_checkpoint({**checkpoint(), **change})


def test_checkpoints_and_progress_are_read_through_the_schema(work: Path, secret: Path) -> None:
    good = checkpoint()
    (work / "metrics.jsonl").write_text(json.dumps(good) + "\n" + '{"step": 1')
    checkpoints, notes = read_checkpoints(work)
    assert checkpoints == [good] and len(notes) == 1
    (work / "metrics.jsonl").write_text(json.dumps({**good, "step": "many"}) + "\n")
    refused(lambda: read_checkpoints(work), "metrics.jsonl", "checkpoint 1", "step")
    (work / "progress.json").write_text('{"schema_version": 1, "steps": 12, "total": 100}')
    assert read_progress(work) == 12
    unversioned = '{"steps": 12, "total": 100}'
    newer = '{"schema_version": 99, "steps": 12, "total": 100}'
    for bad in ('{"schema_version": 1, "steps": "many"}', "[", unversioned, newer):
        (work / "progress.json").write_text(bad)
        assert read_progress(work) is None
    (work / "progress.json").unlink()
    (work / "progress.json").symlink_to(secret)
    assert read_progress(work) is None  # the secret file holds {"steps": 7}
    (work / "progress.json").unlink()
    os.mkfifo(work / "progress.json")
    assert within(5, lambda: read_progress(work)) is None


# --- trajectories, for the bank and the analyzer -----------------------------------------------


def trajectories(path: Path) -> Path:
    adapter = load_task("cartpole")
    episodes = rollout_episodes(adapter, random_policy(adapter, 0), 3, 0)
    fitness = [adapter.fitness(e) for e in episodes]
    save_episodes(path, episodes, fitness, [adapter.success(e) for e in episodes])
    return path


def test_trajectories_are_checked(work: Path) -> None:
    trajectories(work / "trajectories.npz")
    assert len(read_trajectories(work)) == 3
    with np.load(work / "trajectories.npz") as data:
        arrays = {key: data[key] for key in data.files}
    for key, bad in [
        ("offsets", arrays["offsets"][::-1]),
        ("actions", arrays["actions"][:-1]),
        ("fitness", np.array([np.nan, 1.0, 1.0])),
        ("success", np.array([5, 0, 0])),
        ("state/pole_angle", arrays["state/pole_angle"][:3]),
    ]:
        with pytest.raises(BadRecord):
            check_trajectories({**arrays, key: bad})


@pytest.mark.parametrize("plant", ["link", "fifo", "garbage", "inconsistent"])
def test_the_bank_reads_eval_trajectories_only_as_a_worker_file(
    tmp_path: Path, work: Path, plant: str
) -> None:
    """A link to episodes elsewhere, a FIFO, junk: not added, no hang, no traceback."""
    bank = TrajectoryBank(tmp_path / "bank")
    planted = work / "trajectories.npz"
    if plant == "link":
        planted.symlink_to(trajectories(tmp_path / "elsewhere.npz"))
    elif plant == "fifo":
        os.mkfifo(planted)
    elif plant == "garbage":
        planted.write_bytes(b"PK\x03\x04 not a zip")
    else:
        np.savez(planted, offsets=np.array([0, 5]), actions=np.zeros(2), fitness=np.ones(1))
    assert within(10, lambda: bank.add_file(planted, "r00c00")) == 0
    assert bank.load() == []
    (tmp_path / "good").mkdir()
    good = trajectories(tmp_path / "good" / "trajectories.npz")
    assert bank.add_file(good, "r00c01") == 3
