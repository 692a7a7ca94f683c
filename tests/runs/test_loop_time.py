"""A run's time per round from its nodes' recorded wall times (runs/loop_time.py)."""

from __future__ import annotations

import pytest

from rewardsmith.runs.loop_time import loop_time, loop_time_text


def _row(round_: int, node: str, wall_s: float, attempt: int = 0) -> dict[str, object]:
    return {"round": round_, "attempt": attempt, "node": node, "wall_s": wall_s}


def test_training_and_the_loop_s_own_time_are_averaged_over_finished_rounds() -> None:
    rows = [
        _row(0, "design", 0.5),
        _row(0, "critique", 1.0),
        _row(0, "preference_check", 1.5),
        _row(0, "train", 40.0),
        _row(0, "analyze", 0.2),
        _row(0, "select", 3.0),
        _row(1, "design", 0.5),
        _row(1, "critique", 1.0),
        _row(1, "preference_check", 0.5),
        _row(1, "train", 20.0),
        _row(1, "analyze", 0.2),
        _row(1, "select", 1.0),
        _row(1, "finals", 30.0),  # after the rounds: not a round's time
        _row(1, "evaluate", 60.0),
        _row(2, "design", 9.0),  # a round that never reached select does not count
    ]
    summary = loop_time(rows)
    assert summary is not None and summary["rounds"] == 2
    assert summary["training_s"] == pytest.approx(30.0)
    assert summary["loop_s"] == pytest.approx(4.7)
    assert summary["nodes_s"]["select"] == pytest.approx(2.0)
    text = loop_time_text(summary) or ""
    assert text.startswith("time per round: training 30.0 s, the loop's own 4.7 s (select 2.0 s")


def test_a_retried_round_counts_as_a_round_of_its_own_and_no_rows_say_nothing() -> None:
    rows = [_row(0, "train", 1.0), _row(0, "select", 1.0)]
    rows += [_row(0, "train", 3.0, attempt=1), _row(0, "select", 1.0, attempt=1)]
    summary = loop_time(rows)
    assert summary is not None and summary["rounds"] == 2 and summary["training_s"] == 2.0
    assert loop_time([]) is None and loop_time_text(None) is None
