"""Who owns a run or a container: enough about a process to tell later whether it is still alive.

Below both the run store (a run's owner) and the Docker backend (a container's orchestrator).

A run that says `running` after its process was killed is really interrupted. A pid alone cannot
show that, since the kernel reuses pids, so the process start time from /proc is kept with it.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def current_process() -> dict[str, Any]:
    """The identity of this process, to store in run.json."""
    pid = os.getpid()
    return {"pid": pid, "hostname": socket.gethostname(), "start_time": _stat(pid)[1]}


def is_alive(owner: Mapping[str, Any]) -> bool:
    """Whether the process recorded by `current_process` still runs.

    A process on another host cannot be checked, so it is taken to be alive.
    """
    if owner.get("hostname") != socket.gethostname():
        return True
    pid = owner["pid"]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    state, start_time = _stat(pid)
    if state == "Z":
        return False
    recorded = owner.get("start_time")
    return recorded is None or start_time is None or recorded == start_time


def _stat(pid: int) -> tuple[str | None, int | None]:
    """State letter and start time (clock ticks since boot) from /proc/<pid>/stat, if readable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None, None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces and parens
    return fields[0], int(fields[19])
