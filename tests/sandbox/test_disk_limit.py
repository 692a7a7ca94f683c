"""A sandboxed program cannot fill the disk: its one writable directory has a size and an entry cap.

`run_job` measures the directory (lstat only, sparse files as what they occupy) at every poll and
once after the program exits; past a cap the program is killed and fails with `disk_limit`, what
it wrote is removed, and the rest of the run goes on. The checks' folders (`smoke/`,
`preference/`) are removed once their record is read, whatever the outcome. Where the kernel has
Landlock the check programs also seal the disk before loading the reward (`test_sealed_disk.py`),
so a flooding reward's first write is refused instead.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.score import score_bank
from rewardsmith.jobs.smoke import smoke_test
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.sandbox.disk_usage import MAX_DEPTH, measure
from rewardsmith.sandbox.runner import run_job
from rewardsmith.sandbox.types import Limits, Sandbox, SandboxRun
from tests.sandbox.hostile import as_reward

MB = 1024 * 1024
DISK = "disk_limit"  # ErrorCategory.DISK_LIMIT, spelled so the test runs on old code
ESCAPE = (
    'import typing\nimport numpy as np\nimp = vars(getattr(typing, "s" + "ys"))["mod" + "ules"]'
    "['importlib'].import_module\n"
)
# A fake sandboxed program: floods DIR with COUNT files of MODE (`big`: 5 MB each, `empty`,
# `deep`: nested directories), says so, then stays alive like a worker still training.
FLOOD = """\
import os, sys, time
directory, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
block = b"x" * (5 << 20)
for i in range(count):
    if mode == "deep":
        os.mkdir("d")
        os.chdir("d")
        continue
    with open(os.path.join(directory, f"f{i}"), "wb") as handle:
        if mode == "big":
            handle.write(block)
print("flooded", flush=True)
time.sleep(float(sys.argv[4]))
"""


def limits(**caps: int) -> Limits:
    return Limits(wall_s=15, memory_mb=2048, processes=64, output_bytes=64_000, **caps)


def flood(
    sandbox: Sandbox, tmp_path: Path, mode: str, count: int, caps: Limits, sleep_s: float = 30
) -> tuple[object, float]:
    """Run FLOOD in the real sandbox through `run_job`; the job and how long it took."""
    home = tmp_path / "prog"
    home.mkdir()
    script = home / "flood.py"
    script.write_text(FLOOD)
    home.chmod(0o755)
    script.chmod(0o644)
    work = tmp_path / "cand" / "job"
    began = time.monotonic()
    job = run_job(
        sandbox,
        "cProfile",
        ["-o", "/dev/null", str(script), str(work), mode, str(count), str(sleep_s)],
        workdir=work,
        inputs={"job.json": "{}"},
        limits=caps,
        log_path=tmp_path / "cand" / "worker.log",
        readable=[home],
    )
    return job, time.monotonic() - began


def disk_limit(job: object, *says: str) -> str:
    error = job.error  # type: ignore[attr-defined]
    assert error is not None, "expected disk_limit, but it passed"
    assert error.category == DISK, f"{error}\n{error.traceback}"
    for text in says:
        assert text in error.message, error.message
    return str(error.message)


def left(directory: Path) -> int:
    """Bytes the directory still occupies on disk (every entry, not following links)."""
    total = 0
    for parent, dirs, names in os.walk(directory):
        for name in dirs + names:
            total += os.lstat(os.path.join(parent, name)).st_blocks * 512
    return total


# --- (a) a program that writes past its caps is killed at the next poll -------------------------


def test_big_files_past_the_size_cap_end_in_disk_limit_at_once(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """5 MB files in a loop (up to 1 GB) against a 20 MB cap: killed at the next poll, long before
    its wall-clock limit, and what it wrote is gone; the message says how much, the cap and what
    to do."""
    job, took = flood(sandbox, tmp_path, "big", 200, limits(disk_mb=20))
    message = disk_limit(job, "20 MB", "must not write files")
    assert took < 8, f"took {took:.1f} s: not stopped at a poll"
    assert left(tmp_path / "cand" / "job") == 0
    assert "disk" in (tmp_path / "cand" / "worker.log").read_text()
    wrote = float(re.search(r"wrote ([0-9.]+) MB", message).group(1))  # type: ignore[union-attr]
    assert wrote >= 20, message  # what it wrote by the kill: write speed x one poll at most


def test_many_empty_files_past_the_entry_cap_end_in_disk_limit(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """50,000 empty files (no bytes to speak of) against 1,000 entries."""
    job, took = flood(sandbox, tmp_path, "empty", 50_000, limits(disk_files=1000))
    disk_limit(job, "1,000 files")
    assert took < 8, f"took {took:.1f} s: not stopped at a poll"
    assert not any((tmp_path / "cand" / "job").iterdir())


def test_nesting_deeper_than_the_walk_goes_is_disk_limit(sandbox: Sandbox, tmp_path: Path) -> None:
    """A tree too deep to measure is not a place to hide gigabytes."""
    job, took = flood(sandbox, tmp_path, "deep", MAX_DEPTH + 5, limits())
    disk_limit(job, "deep")
    assert took < 8


def test_a_program_within_its_caps_is_untouched(sandbox: Sandbox, tmp_path: Path) -> None:
    job, _ = flood(sandbox, tmp_path, "big", 2, limits(disk_mb=20), sleep_s=0.6)
    assert job.error is None or job.error.category != DISK  # type: ignore[attr-defined]
    assert len(list((tmp_path / "cand" / "job").iterdir())) == 3  # job.json and its two files


class Writes:
    """A stand-in sandbox whose program writes `mb` MB in one file and exits before any poll."""

    name = "scripted"

    def __init__(self, mb: int) -> None:
        self.mb = mb

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun:
        (writable[0] / "out.bin").write_bytes(b"x" * (self.mb * MB))
        return SandboxRun(0, False, 0.01, "out\n", 4, "scripted")


def run_writes(tmp_path: Path, mb: int, inputs: dict[str, bytes | str]) -> object:
    return run_job(
        Writes(mb),
        "m",
        [],
        workdir=tmp_path / "work",
        inputs=inputs,
        limits=limits(disk_mb=20),
        log_path=tmp_path / "logs" / "m.log",
        what="smoke test on cartpole",
    )


def test_a_program_faster_than_one_poll_is_caught_after_it_exits(tmp_path: Path) -> None:
    job = run_writes(tmp_path, 30, {})
    disk_limit(job, "smoke test on cartpole: ", "20 MB")
    assert left(tmp_path / "work") == 0


def test_the_inputs_do_not_count_against_the_cap(tmp_path: Path) -> None:
    """The orchestrator's own copies (a 30 MB bank) are not the program's writing."""
    job = run_writes(tmp_path, 5, {"bank.npz": b"\0" * (30 * MB)})
    assert job.error is None  # type: ignore[attr-defined]


# --- the measurement itself ----------------------------------------------------------------------


def test_a_sparse_file_counts_as_what_it_occupies(tmp_path: Path) -> None:
    with (tmp_path / "sparse").open("wb") as handle:
        handle.truncate(10 * 1024 * MB)
    (tmp_path / "real").write_bytes(b"x" * MB)
    usage = measure(tmp_path, 100 * MB, 100)
    assert MB <= usage.bytes < 2 * MB and usage.entries == 2 and usage.problem is None


def test_links_are_counted_never_followed(tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "big").write_bytes(b"x" * (4 * MB))
    work = tmp_path / "work"
    work.mkdir()
    (work / "to-dir").symlink_to(host)
    (work / "to-file").symlink_to(host / "big")
    usage = measure(work, 100 * MB, 100)
    assert usage.entries == 2 and usage.bytes < MB


def test_the_walk_stops_as_soon_as_a_cap_is_passed(tmp_path: Path) -> None:
    """5,000 files cost what the cap's 100 do: nothing is looked at past the 101st."""
    for i in range(5_000):
        (tmp_path / f"f{i}").touch()
    assert measure(tmp_path, 100 * MB, 100).entries == 101
    assert measure(tmp_path, 100 * MB, 100_000).entries == 5_000
    (tmp_path / "f0").write_bytes(b"x" * (2 * MB))
    assert MB < measure(tmp_path, MB, 100_000).bytes < 3 * MB


def test_a_missing_directory_is_empty(tmp_path: Path) -> None:
    assert measure(tmp_path / "gone", 1, 1).entries == 0


# --- (b) the checks: a flood fails the candidate, and their folders never stay ------------------


def human(task: TaskAdapter) -> str:
    source = task.reward_source("human")
    assert source is not None
    return source


def refused(job: object) -> None:
    """The check program sealed the disk before it loaded the reward (Landlock where the kernel
    has it, seccomp on every backend): the reward's first write is refused, whatever its speed."""
    error = job.error  # type: ignore[attr-defined]
    assert error is not None, "expected the flood to fail the candidate"
    assert error.category is ErrorCategory.RUNTIME_ERROR, f"{error}\n{error.traceback}"
    assert "Permission denied" in error.message, error.message


def test_a_reward_that_floods_its_smoke_dir_fails_the_candidate(
    cartpole: TaskAdapter, states: Path, tmp_path: Path, sandbox: Sandbox
) -> None:
    """Ten 100 MB files from the reward's first call: the candidate fails, its folder goes."""
    flooding = as_reward([[f"f{i}", "big", "x"] for i in range(10)], ESCAPE)
    work = tmp_path / "cand" / "smoke"
    report = smoke_test(cartpole, flooding, work, states, sandbox, limits())
    assert not report.ok
    refused(report)
    assert not work.exists() and not os.path.lexists(work)
    assert (tmp_path / "cand" / "logs" / "smoke.log").exists()


def test_a_passing_smoke_test_leaves_no_folder(
    cartpole: TaskAdapter, states: Path, tmp_path: Path, sandbox: Sandbox
) -> None:
    good = human(cartpole)
    work = tmp_path / "cand" / "smoke"
    report = smoke_test(cartpole, good, work, states, sandbox, limits())
    assert report.ok, report.error
    assert not os.path.lexists(work)
    assert (tmp_path / "cand" / "logs" / "smoke.log").exists()


def test_bank_scoring_leaves_no_folder(
    cartpole: TaskAdapter, states: Path, tmp_path: Path, sandbox: Sandbox
) -> None:
    good = human(cartpole)
    work = tmp_path / "cand" / "preference"
    scores = score_bank(good, work, states, sandbox, limits())
    assert scores.ok, scores.error
    assert not os.path.lexists(work)
    flooding = as_reward([[f"f{i}", "big", "x"] for i in range(10)], ESCAPE)
    scores = score_bank(flooding, work, states, sandbox, limits())
    refused(scores)
    assert not os.path.lexists(work)


def test_the_category_has_a_stable_name() -> None:
    assert ErrorCategory("disk_limit").value == DISK
