"""SIGTERM and SIGHUP take Ctrl-C's clean path, after the sandboxes are told to stop.

Before, both ended `rewardsmith run`/`train` at once: no `finally` ran, so sandboxes kept
training and the run was left `running`. The end-to-end checks (a real `train` or `run`
subprocess, its containers and workers) are in tests/sandbox/test_docker_hygiene.py.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest

from rewardsmith.commands import signals


@pytest.fixture
def stops(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Calls to stop the sandboxes (`remove` flag of each), instead of reaching an engine.

    The signals start as a terminal gives them to a fresh `rewardsmith` (a suite started in the
    background has SIGINT ignored; a library such as Ray may have taken SIGTERM over)."""
    calls: list[bool] = []
    monkeypatch.setattr(signals, "_stop_sandboxes", lambda remove=False: calls.append(remove))
    fresh = {
        signal.SIGINT: signal.default_int_handler,
        signal.SIGTERM: signal.SIG_DFL,
        signal.SIGHUP: signal.SIG_DFL,
    }
    kept = {sig: signal.signal(sig, handler) for sig, handler in fresh.items()}
    yield calls
    for sig, handler in kept.items():
        signal.signal(sig, handler)


def _deliver(sig: signal.Signals) -> None:
    os.kill(os.getpid(), sig)
    time.sleep(0.5)  # the handler runs here, between bytecodes


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: s.name
)
def test_a_stop_signal_is_a_keyboard_interrupt_after_stopping_sandboxes(
    sig: signal.Signals, stops: list[bool]
) -> None:
    before = signal.getsignal(sig)
    with pytest.raises(KeyboardInterrupt), signals.stop_on_signals():
        _deliver(sig)
    assert stops == [False, True]  # killed at the signal, then removed on the way out
    assert signals.exit_code() == 128 + sig
    assert signal.getsignal(sig) is before


def test_an_ignored_signal_stays_ignored(stops: list[bool]) -> None:
    """`nohup rewardsmith run ...` must survive the terminal closing."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with signals.stop_on_signals():
            _deliver(signal.SIGHUP)
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
    assert stops == [True]  # only the cleanup on the way out


def test_without_a_signal_the_exit_code_is_ctrl_c(stops: list[bool]) -> None:
    with pytest.raises(KeyboardInterrupt), signals.stop_on_signals():
        raise KeyboardInterrupt
    assert signals.exit_code() == 130
