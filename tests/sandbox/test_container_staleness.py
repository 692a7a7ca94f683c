"""Which worker containers a sweep removes: the rule alone, no engine needed.

A sweep runs while other orchestrators (other runs, other users' tests) share the engine, so it
must never take a container whose orchestrator still runs; the live end-to-end checks are in
test_docker_hygiene.py.
"""

from __future__ import annotations

import os
import socket
import subprocess

from rewardsmith.processes import current_process
from rewardsmith.sandbox.docker.hygiene import MARGIN_S, owner_labels, stale_reason

HOST = socket.gethostname()
NOW = 1_000_000.0


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _labels(pid: int, started: float = NOW, wall: float = 60, host: str = HOST) -> dict[str, str]:
    return {
        "rewardsmith.sandbox": "worker",
        "rewardsmith.pid": str(pid),
        "rewardsmith.host": host,
        "rewardsmith.started": str(started),
        "rewardsmith.wall-s": str(wall),
    }


def test_a_container_of_a_live_orchestrator_is_kept_until_past_its_limit() -> None:
    mine = _labels(os.getpid())
    assert stale_reason(mine, "running", NOW, NOW + 10, HOST) is None
    assert stale_reason(mine, "exited", NOW, NOW + 10, HOST) is None  # being collected
    late = stale_reason(mine, "running", NOW, NOW + 60 + MARGIN_S + 1, HOST)
    assert late is not None and "wall-clock limit" in late


def test_a_container_of_a_dead_orchestrator_is_stale_at_once() -> None:
    reason = stale_reason(_labels(_dead_pid()), "running", NOW, NOW + 1, HOST)
    assert reason is not None and "is gone" in reason


def test_a_reused_pid_is_not_taken_for_the_orchestrator() -> None:
    labels = _labels(os.getpid()) | {"rewardsmith.pid-start": "1"}
    assert current_process()["start_time"] != 1
    assert stale_reason(labels, "running", NOW, NOW + 1, HOST) is not None


def test_an_unknown_orchestrator_is_judged_by_age() -> None:
    other = _labels(os.getpid(), host="elsewhere")
    assert stale_reason(other, "running", NOW, NOW + 10, HOST) is None
    assert stale_reason(other, "running", NOW, NOW + 60 + MARGIN_S + 1, HOST) is not None
    assert stale_reason(other, "exited", NOW, NOW + MARGIN_S + 1, HOST) is not None
    unlabelled = {"rewardsmith.sandbox": "worker"}  # an older rewardsmith's
    assert stale_reason(unlabelled, "running", NOW, NOW + 600, HOST) is None
    assert stale_reason(unlabelled, "exited", NOW, NOW + MARGIN_S + 1, HOST) is not None
    garbled = {"rewardsmith.pid": "x", "rewardsmith.wall-s": "many"}
    assert stale_reason(garbled, "running", NOW, NOW + 10, HOST) is None


def test_owner_labels_name_this_process_and_the_run() -> None:
    labels = owner_labels("run-1", 90)
    me = current_process()
    assert labels["rewardsmith.run"] == "run-1" and labels["rewardsmith.wall-s"] == "90"
    assert labels["rewardsmith.pid"] == str(me["pid"]) and labels["rewardsmith.host"] == HOST
    assert labels["rewardsmith.pid-start"] == str(me["start_time"])
    assert "rewardsmith.run" not in owner_labels(None, 90)
