"""A stopping run kills the critic's and the preference check's programs within one poll,
as it does training: they no longer run on to their own wall-clock limits after Ctrl-C."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.bank import TrajectoryBank, seed_bank
from rewardsmith.eureka_loop.state import Cancelled
from rewardsmith.jobs.score import SCORE_WALL_S, score_bank
from rewardsmith.jobs.smoke import SMOKE_WALL_S, record_states, smoke_test
from rewardsmith.sandbox.executor import ProcessSandbox

CARTPOLE = load_task("cartpole")
SPINS = "def compute_reward(state, action, next_state):\n    while True:\n        pass\n"


def _cancel_after(seconds: float) -> Callable[[], None]:
    """A poll that raises once `seconds` have passed, as `Context.raise_if_cancelled` does."""
    cancel = threading.Event()
    threading.Timer(seconds, cancel.set).start()

    def poll() -> None:
        if cancel.is_set():
            raise Cancelled()

    return poll


@pytest.mark.slow
def test_a_cancel_stops_the_smoke_test(tmp_path: Path) -> None:
    states = tmp_path / "states.npz"
    record_states(CARTPOLE, states, seed=0)
    poll = _cancel_after(1.0)
    start = time.monotonic()
    with pytest.raises(Cancelled):
        smoke_test(CARTPOLE, SPINS, tmp_path / "smoke", states, ProcessSandbox(), on_poll=poll)
    assert time.monotonic() - start < SMOKE_WALL_S / 4


@pytest.mark.slow
def test_a_cancel_stops_the_bank_scoring(tmp_path: Path) -> None:
    bank = TrajectoryBank(tmp_path / "bank")
    seed_bank(CARTPOLE, bank, 0)
    poll = _cancel_after(1.0)
    start = time.monotonic()
    with pytest.raises(Cancelled):
        score_bank(SPINS, tmp_path / "score", bank.path, ProcessSandbox(), on_poll=poll)
    assert time.monotonic() - start < SCORE_WALL_S / 4
