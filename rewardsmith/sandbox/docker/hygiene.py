"""Whose a worker container is, the ones this process has running, and which are stale.

A container outlives the process that started it unless someone removes it: after SIGKILL, a
crash, or a power cut of the orchestrator, it trains on until its own limit and then lies
around exited. So each container is labelled with its run id and its orchestrator (pid, the pid's
start time, so a reused pid is not mistaken for it, and host), plus when it started and its
wall-clock limit. A container is stale when its orchestrator on this host is gone, or, where that
cannot be checked (another host, an older rewardsmith), once it is past its wall-clock limit and a
margin. The orchestrator also keeps a registry of the containers it has running, so that a
signal can kill them all before it exits.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from rewardsmith.processes import current_process, is_alive

LABEL_SANDBOX = "rewardsmith.sandbox"
WORKER = "worker"
LABEL_RUN = "rewardsmith.run"
LABEL_PID = "rewardsmith.pid"
LABEL_PID_START = "rewardsmith.pid-start"
LABEL_HOST = "rewardsmith.host"
LABEL_STARTED = "rewardsmith.started"
LABEL_WALL = "rewardsmith.wall-s"
MARGIN_S = 300.0
"""How long past its wall-clock limit a container of an unknown orchestrator may still be live."""
UNLABELLED_WALL_S = 3600.0
"""The wall-clock limit assumed for a container without one (an older rewardsmith's)."""


def owner_labels(run_id: str | None, wall_s: float) -> dict[str, str]:
    """The labels of a container this process starts now."""
    me = current_process()
    labels = {
        LABEL_SANDBOX: WORKER,
        LABEL_PID: str(me["pid"]),
        LABEL_HOST: str(me["hostname"]),
        LABEL_STARTED: f"{time.time():.3f}",
        LABEL_WALL: f"{wall_s:g}",
    }
    if me["start_time"] is not None:
        labels[LABEL_PID_START] = str(me["start_time"])
    if run_id:
        labels[LABEL_RUN] = run_id
    return labels


class LiveContainers:
    """The containers this process has created and not yet removed (thread-safe).

    `stop_all` marks them stopped and kills them; a backend that finds its container stopped
    this way reports an interruption, not a result (a killed worker is not the reward's fault).
    """

    def __init__(self) -> None:
        # Re-entrant: a signal handler may call `stop_all` on a thread that holds the lock.
        self._lock = threading.RLock()
        self._names: dict[str, bool] = {}

    def add(self, name: str) -> None:
        """Register `name` before its container is created: a signal mid-create still kills it."""
        with self._lock:
            self._names[name] = False

    def discard(self, name: str) -> bool:
        """Forget `name`; whether `stop_all` stopped it."""
        with self._lock:
            return self._names.pop(name, False)

    def stopped(self, name: str) -> bool:
        """Whether `stop_all` has stopped `name` (False for a name not registered)."""
        with self._lock:
            return self._names.get(name, False)

    def stop_all(self, client: Any, remove: bool = False) -> list[str]:
        """Kill (or force-remove) every live container; the names it tried."""
        with self._lock:
            names = list(self._names)
            for name in names:
                self._names[name] = True
        for name in names:
            with contextlib.suppress(Exception):
                if remove:
                    client.api.remove_container(name, force=True)
                else:
                    client.api.kill(name)
        return names

    def __len__(self) -> int:
        with self._lock:
            return len(self._names)


@dataclass
class StaleContainer:
    """A worker container no live orchestrator will remove, and why."""

    id: str
    run: str | None
    state: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form `rewardsmith doctor` prints for a stale or swept container."""
        return asdict(self)


def _number(labels: Mapping[str, str], key: str) -> float | None:
    try:
        return float(labels[key])
    except (KeyError, TypeError, ValueError):
        return None


def stale_reason(
    labels: Mapping[str, str], state: str, created: float, now: float, host: str
) -> str | None:
    """Why a worker container is stale, or None while some orchestrator may still own it."""
    wall = _number(labels, LABEL_WALL) or UNLABELLED_WALL_S
    age = now - (_number(labels, LABEL_STARTED) or created)
    pid = _number(labels, LABEL_PID)
    if pid is not None and labels.get(LABEL_HOST) == host:
        start = _number(labels, LABEL_PID_START)
        owner = {"pid": int(pid), "hostname": host, "start_time": start and int(start)}
        if not is_alive(owner):
            return f"its orchestrator (pid {int(pid)}) is gone"
        if age > wall + MARGIN_S:
            return f"past its {wall:g} s wall-clock limit"
        return None  # its orchestrator runs, and removes it when done
    if age > wall + MARGIN_S:
        return f"past its {wall:g} s wall-clock limit (orchestrator not checkable here)"
    if state != "running" and age > MARGIN_S:
        return f"{state} (orchestrator not checkable here)"
    return None


def find_stale(client: Any) -> list[StaleContainer]:
    """The stale worker containers on this engine, oldest first."""
    now, host = time.time(), socket.gethostname()
    found = []
    listed = client.api.containers(all=True, filters={"label": f"{LABEL_SANDBOX}={WORKER}"})
    for c in sorted(listed, key=lambda c: c.get("Created", 0)):
        labels = c.get("Labels") or {}
        state = str(c.get("State", "?"))
        reason = stale_reason(labels, state, float(c.get("Created", now)), now, host)
        if reason is not None:
            found.append(StaleContainer(str(c["Id"]), labels.get(LABEL_RUN), state, reason))
    return found


def remove(client: Any, containers: list[StaleContainer]) -> list[StaleContainer]:
    """Force-remove `containers` (killing those still running); the ones removed."""
    removed = []
    for c in containers:
        try:
            client.api.remove_container(c.id, force=True)
        except Exception as exc:
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                continue  # gone already counts as removed; anything else is left for next time
        removed.append(c)
    return removed


def describe(containers: list[StaleContainer]) -> str:
    """`id (run r, exited: why)` for each, comma-separated."""
    return ", ".join(f"{c.id[:12]} (run {c.run or '?'}, {c.state}: {c.reason})" for c in containers)
