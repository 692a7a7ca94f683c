"""Selection by fitness: the incumbent keeps near-ties, and a fitness of 0 is a fitness."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rewardsmith.eureka_loop.selection import SELECTION_MARGIN, _margin, select
from rewardsmith.eureka_loop.selection_rule import better as _better
from rewardsmith.eureka_loop.selection_rule import pick_best
from tests.eureka_loop.select_run import SelectRun


def _cand(idx: int, fitness: float | None) -> dict:
    return {"round": 1, "idx": idx, "fitness": fitness}


def test_a_near_tie_keeps_the_incumbent_and_a_clear_win_replaces_it() -> None:
    incumbent = _cand(0, 493.9)
    assert _better(incumbent, _cand(1, 500.0), margin=8.0) is incumbent
    challenger = _cand(2, 502.0)
    assert _better(incumbent, challenger, margin=8.0) is challenger
    assert _better(incumbent, _cand(3, 500.0)) is not incumbent  # no margin: plain maximum


def test_zero_and_missing_fitness_order_correctly() -> None:
    zero, negative, missing = _cand(0, 0.0), _cand(1, -0.5), _cand(2, None)
    assert _better(negative, zero) is zero
    assert _better(zero, negative) is zero
    assert _better(missing, negative) is negative
    assert _better(None, missing) is missing


def test_margin_is_a_share_of_the_spread_seen_in_the_run() -> None:
    rows = [{"fitness": 100.0}, {"fitness": None}, {"fitness": 500.0}, {"fitness": 300.0}]
    ctx = SimpleNamespace(run=SimpleNamespace(candidates=lambda: rows))
    assert _margin(ctx) == SELECTION_MARGIN * 400.0  # type: ignore[arg-type]
    ctx_one = SimpleNamespace(run=SimpleNamespace(candidates=lambda: rows[:1]))
    assert _margin(ctx_one) == 0.0  # type: ignore[arg-type]


def test_within_a_round_the_earlier_candidate_keeps_a_near_tie() -> None:
    human, lucky, clear = _cand(0, 499.9), _cand(1, 500.0), _cand(2, 520.0)
    assert pick_best(None, [lucky, human], margin=8.0) == (human, human)
    round_best, best = pick_best(human, [clear, lucky], margin=8.0)
    assert round_best is clear and best is clear


def test_the_select_node_keeps_the_incumbent_and_says_why(tmp_path: Path) -> None:
    human = {"round": 0, "idx": 0, "fitness": 493.9, "status": "trained"}
    lucky = {"round": 2, "idx": 0, "fitness": 500.0, "status": "trained"}
    rows = [human, {"fitness": 153.4}, lucky]
    messages: list[str] = []
    ctx = SimpleNamespace(
        run=SelectRun(rows, tmp_path),
        reporter=SimpleNamespace(message=messages.append, best=lambda summary: None),
        config=SimpleNamespace(
            fitness_target=None,
            round_retries=2,
            rounds=3,
            confirm_best=False,
            videos="none",
            judge="none",
            fitness="task",
        ),
        budget=None,
    )
    state = {"round": 2, "attempt": 0, "candidates": [lucky], "best": human}
    update = select(state, SimpleNamespace(context=ctx))  # type: ignore[arg-type]
    assert update["best"] is human
    assert update["history"][0]["round_best"] == "r02c00"
    assert update["history"][0]["best"] == "r00c00"
    assert len(messages) == 1 and "r02c00 (500) is within the noise margin" in messages[0]
    assert ctx.run.summary["best_candidate"] == "r00c00"


def _select(
    tmp_path: Path, state: dict[str, Any], *, target: float | None = None, budget: object = None
) -> tuple[dict[str, Any], list[str]]:
    messages: list[str] = []
    ctx = SimpleNamespace(
        run=SelectRun(state.get("candidates") or [], tmp_path),
        reporter=SimpleNamespace(message=messages.append, best=lambda summary: None),
        config=SimpleNamespace(
            fitness_target=target,
            round_retries=1,
            rounds=3,
            confirm_best=False,
            videos="none",
            judge="none",
            fitness="task",
        ),
        budget=budget,
    )
    return select(state, SimpleNamespace(context=ctx)), messages  # type: ignore[arg-type]


def test_the_select_node_routes_on_retries_targets_budgets_and_the_last_round(
    tmp_path: Path,
) -> None:
    full = {"round": 1, "idx": 0, "fitness": 10.0, "status": "trained"}
    # Halving: a candidate stopped at a shorter rung does not compete, however fit.
    early = {"round": 1, "idx": 1, "fitness": 99.0, "status": "trained", "stopped_at_rung": 0}
    update, _ = _select(tmp_path, {"round": 1, "candidates": [full, early]})
    assert update["best"] is full and update["history"][0]["trained"] == 2
    assert (update["round"], update["attempt"]) == (2, 0)
    # Nothing trained: the round repeats while retries are left, then the run goes on.
    failed = {"round": 1, "idx": 0, "status": "failed"}
    update, messages = _select(tmp_path, {"round": 1, "candidates": [failed]})
    assert update["attempt"] == 1 and "repeating the round (attempt 2)" in messages[0]
    update, _ = _select(tmp_path, {"round": 1, "attempt": 1, "candidates": [failed]})
    assert (update["round"], update["attempt"]) == (2, 0)
    assert update["history"][0]["failed"] == 1 and update["best"] is None
    # The fitness target, then a spent budget, then the last round stop the run.
    update, _ = _select(tmp_path, {"round": 1, "candidates": [full]}, target=10.0)
    assert update["stop_reason"] == "fitness target 10.0 reached"
    spent = SimpleNamespace(exceeded=lambda: "token budget spent")
    update, _ = _select(tmp_path, {"round": 1, "candidates": [full]}, budget=spent)
    assert update["stop_reason"] == "budget: token budget spent"
    update, _ = _select(tmp_path, {"round": 2, "candidates": [full]})
    assert update["stop_reason"] == "completed 3 rounds"
    update, _ = _select(tmp_path, {"round": 0, "candidates": [], "stop_reason": "budget: x"})
    assert update["stop_reason"] == "budget: x" and "attempt" not in update
