"""Stop on SIGTERM and SIGHUP as on Ctrl-C, and leave no sandbox running.

Python turns only SIGINT into KeyboardInterrupt; SIGTERM (`kill`, systemd, a CI timeout) and
SIGHUP (the terminal closed) end the process at once, skipping every `finally`: the process
backend's workers and the Docker containers trained on until their own wall-clock limit, and the
run was left marked `running`. Inside `stop_on_signals()` all three raise KeyboardInterrupt, so
they take the one clean path (runs marked interrupted, the resume command printed, process groups
killed in the backend's `finally`), and first kill this process's containers, which the engine,
not this process, would otherwise keep alive.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_received: list[int] = []


def _stop_sandboxes(remove: bool = False) -> None:
    from rewardsmith.sandbox.docker_backend import stop_live_containers

    stop_live_containers(remove=remove)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    _stop_sandboxes()
    raise KeyboardInterrupt


def _ours(sig: signal.Signals, current: Any) -> bool:
    """Whether to take `sig` over: not where it is ignored (nohup, a background job's SIGINT)
    or handled by someone else; SIGINT only from Python's own KeyboardInterrupt handler."""
    if sig == signal.SIGINT:
        return current is signal.default_int_handler
    return current is signal.SIG_DFL


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt after killing this process's containers;
    on the way out any container still registered is removed. A no-op off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    taken = [sig for sig in STOP_SIGNALS if _ours(sig, previous[sig])]
    _received.clear()
    for sig in taken:
        signal.signal(sig, _on_signal)
    try:
        yield
    finally:
        try:
            _stop_sandboxes(remove=True)
        finally:
            for sig in taken:
                signal.signal(sig, previous[sig])


def exit_code() -> int:
    """The shell's code for the stop signal received (128 + its number); 130 (SIGINT) if none."""
    return 128 + (_received[0] if _received else signal.SIGINT)
