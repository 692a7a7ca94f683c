"""Parsing reward source from several threads at once (the critic's fan-out) must not fail."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from rewardsmith.reward.static import check_source

_SOURCE = (
    "import numpy as np\n\n\n"
    "def compute_reward(state, action, next_state):\n"
    "    x = " + "(" * 30 + "next_state.x" + ")" * 30 + "\n"
    "    terms = {"
    + ", ".join(f"'t{i}': [[x + {i} for _ in y] for y in z]" for i in range(40))
    + "}\n"
    "    return x, terms\n"
)


@pytest.fixture
def collections_switch_threads() -> Iterator[None]:
    """Let another thread run whenever the garbage collector runs, as finalizers can do."""
    callback: Callable[[str, dict[str, int]], None] = lambda phase, info: time.sleep(0)  # noqa: E731
    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(100, 1, 1)
    yield
    gc.callbacks.remove(callback)
    gc.set_threshold(*threshold)


def _at_depth(depth: int, fn: Callable[[], object]) -> object:
    return fn() if depth == 0 else _at_depth(depth - 1, fn)


def test_threads_at_different_stack_depths_parse_without_a_system_error(
    collections_switch_threads: None,
) -> None:
    errors: list[BaseException] = []

    def parse_repeatedly(depth: int) -> None:
        for _ in range(150):
            try:
                _at_depth(depth, lambda: check_source(_SOURCE))
            except BaseException as exc:  # any failure is the finding
                errors.append(exc)
                return

    threads = [threading.Thread(target=parse_repeatedly, args=(d,)) for d in (1, 5, 9, 13)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
