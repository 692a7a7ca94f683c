"""A candidate cannot reach a concurrent rival, wherever the run store lives.

The README's setup keeps the run store in the checkout, outside the directories the sandbox used
to hide (/tmp, homes, /var, ...). There, on the process backend without bubblewrap, a reward ran
as the same uid as every other candidate's programs and could chmod, rename or unlink a rival's
folder (Landlock does not govern chmod or setxattr) and so forge the selection. The store here is
therefore made inside the checkout, not in `tmp_path`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.training import TrainOutcome, make_job, train_reward
from rewardsmith.sandbox.types import Limits, Sandbox

CHECKOUT = Path(__file__).resolve().parents[2]
LIMITS = Limits(wall_s=120, memory_mb=2048, processes=64, output_bytes=64_000)
ATTACK_S = 12.0

# Reward code reaches `os` through strings the static check cannot follow (as in
# test_bad_rewards.py). Its thread attacks the rival's folder for ATTACK_S seconds by its absolute
# path (an attacker who read this repository knows the layout), then the reward raises with what
# it reached, so the test can read the report from the attacker's error.
ATTACK = """\
import typing
import numpy as np

modules = vars(getattr(typing, "s" + "ys"))["mod" + "ules"]
imp = modules["importlib"].import_module
os, threading, time, ctypes, io = (imp(m) for m in ("os", "threading", "time", "ctypes", "io"))
RIVAL = {rival!r}
REACHED = set()


def tried(what, action):
    try:
        action()
        REACHED.add(what)
    except Exception:
        pass


def attack():
    libc = ctypes.CDLL(None, use_errno=True)
    end = time.monotonic() + {seconds}
    while time.monotonic() < end:
        for folder in (RIVAL, RIVAL + "/job", RIVAL + "/eval"):
            tried("stat", lambda: os.stat(folder))
            tried("list", lambda: os.listdir(folder))
            tried("setxattr", lambda: os.setxattr(folder, "user.rival", b"x"))
            tried("chmod", lambda: os.chmod(folder, 0))
            for name in ("result.json", "policy.zip", "job.json", "reward.py"):
                path = folder + "/" + name
                tried("chmod", lambda: os.chmod(path, 0))
                tried("rename", lambda: os.rename(path, path + ".gone"))
                tried("unlink", lambda: os.unlink(path))
            fd = libc.inotify_init()
            if fd >= 0 and libc.inotify_add_watch(fd, folder.encode(), 0xFFF) >= 0:
                REACHED.add("inotify")
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with io.open("/proc/" + pid + "/cmdline", "rb") as handle:
                        if RIVAL.encode() in handle.read():
                            os.kill(int(pid), 9)
                            REACHED.add("signal")
                except Exception:
                    pass
        time.sleep(0.05)


ATTACKER = threading.Thread(target=attack, daemon=True)
ATTACKER.start()


def compute_reward(state, action, next_state):
    if not ATTACKER.is_alive():
        raise RuntimeError("attack report: " + ",".join(sorted(REACHED)) + ";")
    one = np.ones(len(action))
    return one, {{"alive": one}}
"""


@pytest.fixture
def store_in_checkout() -> Iterator[Path]:
    """A run store inside the checkout, as the README's setup keeps it."""
    path = Path(tempfile.mkdtemp(prefix=".test-store-", dir=CHECKOUT))
    path.chmod(0o755)  # as `rewardsmith run` makes its store (mkdtemp's 0700 would hide it)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def line() -> TaskAdapter:
    return load_task("line")


def train(
    task: TaskAdapter, sandbox: Sandbox, source: str | None, folder: Path, steps: int
) -> TrainOutcome:
    job = make_job(task, steps=steps, seed=0)
    job.eval_episodes, job.n_checkpoints = 4, 2
    return train_reward(task, job, source, folder, sandbox, LIMITS)


def attack_a_rival(
    line: TaskAdapter, sandbox: Sandbox, store: Path
) -> tuple[TrainOutcome, TrainOutcome, Path, set[str]]:
    """The rival trained alone, then again while the attacker's reward attacks its folder: both
    outcomes, the rival's folder, and what the attacker reached."""
    round_dir = store / "run" / "round_0"
    victim_dir, attacker_dir = round_dir / "cand_0", round_dir / "cand_1"
    alone = train(line, sandbox, None, store / "alone" / "cand_0", steps=2048)
    assert alone.ok, alone.error

    attacker: list[TrainOutcome] = []
    source = ATTACK.format(rival=str(victim_dir), seconds=ATTACK_S)
    thread = threading.Thread(
        target=lambda: attacker.append(train(line, sandbox, source, attacker_dir, 10**7))
    )
    thread.start()
    try:
        victim = train(line, sandbox, None, victim_dir, steps=2048)
    finally:
        thread.join(timeout=LIMITS.wall_s + 30)
    error = str(attacker[0].error)
    assert "attack report:" in error, error  # it ran its whole attack
    report = error.split("attack report:")[1].split(";")[0]
    return alone, victim, victim_dir, {word.strip() for word in report.split(",") if word.strip()}


def test_a_candidate_cannot_touch_a_concurrent_rival(
    sandbox: Sandbox, line: TaskAdapter, store_in_checkout: Path
) -> None:
    alone, victim, victim_dir, reached = attack_a_rival(line, sandbox, store_in_checkout)
    # The victim trained as it does alone: the same fitness, its records intact.
    assert victim.ok, victim.error
    assert victim.fitness == alone.fitness
    assert json.loads((victim_dir / "job" / "result.json").read_text())["status"] == "ok"
    assert not list(victim_dir.rglob("*.gone"))
    # The attacker reached nothing of the rival: not even its name.
    assert reached == set(), reached


@pytest.mark.slow
def test_where_rivals_cannot_be_hidden_they_are_seen_but_not_changed(
    line: TaskAdapter, store_in_checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not root, no user namespaces, no bubblewrap: every candidate runs as the same user and
    sees the others' folders. Landlock (to ABI 7) does not govern chmod or setxattr, so a reward
    could chmod a rival's folders to 000 and crash it; seccomp denies those calls there. Played
    here by turning the hiding and the uid change off (this machine could do both)."""
    from rewardsmith.sandbox.executor import ProcessSandbox
    from rewardsmith.sandbox.process_isolation import Isolation

    sandbox = ProcessSandbox(use_bwrap=False, drop_root=False)  # one user for every candidate
    if not sandbox.confined:
        pytest.skip("no Landlock here: without bubblewrap the process backend refuses")
    monkeypatch.setattr(Isolation, "hides_host", property(lambda self: False))
    alone, victim, victim_dir, reached = attack_a_rival(line, sandbox, store_in_checkout)
    assert victim.ok, victim.error
    assert victim.fitness == alone.fitness
    assert not list(victim_dir.rglob("*.gone"))
    assert "stat" in reached, reached  # in sight: the hiding really was off
    assert not {"chmod", "setxattr", "rename", "unlink", "inotify"} & reached, reached
