"""benchmarks/halving_replay.py: halving's own rule, applied to full learning curves."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.benchmarks.scripts import load_script


@pytest.fixture(scope="module")
def replay() -> ModuleType:
    return load_script("halving_replay")


def curve(replay: ModuleType, name: str, points: dict[int, float]) -> object:
    steps = sorted(points)
    return replay.Curve(name, points[steps[-1]], tuple((s, points[s]) for s in steps))


def test_a_late_starter_is_cut_at_the_first_rung_and_the_regret_says_what_it_cost(
    replay: ModuleType,
) -> None:
    late = curve(replay, "late", {20: 0.0, 50: 25.0, 100: 100.0})
    early = curve(replay, "early", {20: 5.0, 50: 20.0, 100: 50.0})
    steady = curve(replay, "steady", {20: 4.0, 50: 30.0, 100: 60.0})
    flat = curve(replay, "flat", {20: 1.0, 50: 2.0, 100: 10.0})
    result = replay.replay_round([late, early, steady, flat], 100)
    # Rungs at 25, 50 and 100 steps: the first keeps the 2 fittest at step 20's checkpoint,
    # the second the fitter of those at step 50.
    assert [c.name for c in result.first_rung_kept] == ["early", "steady"]
    assert result.pick.name == "steady" and result.best.name == "late"
    assert not result.kept_best
    assert result.regret == pytest.approx(0.4)
    assert result.steps_fraction == pytest.approx((4 * 25 + 2 * 25 + 50) / 400)  # 0.5x
    # A first rung at half the budget keeps the late starter, for 0.75x the steps.
    later = replay.replay_round([late, early, steady, flat], 100, (0.5, 1.0))
    assert later.kept_best and later.pick.name == "late" and later.regret == 0
    assert later.steps_fraction == pytest.approx(0.75)


def test_three_candidates_send_one_straight_to_the_full_budget(replay: ModuleType) -> None:
    a = curve(replay, "a", {25: 3.0, 100: 7.0})
    b = curve(replay, "b", {25: 2.0, 100: 9.0})
    c = curve(replay, "c", {25: 1.0, 100: 8.0})
    result = replay.replay_round([a, b, c], 100)
    assert [x.name for x in result.first_rung_kept] == ["a"] and result.pick.name == "a"
    assert result.regret == pytest.approx(2 / 9)
    assert result.steps_fraction == pytest.approx((3 * 25 + 25 + 50) / 300)  # 0.5x


def test_a_tie_within_one_percent_counts_as_keeping_the_best(replay: ModuleType) -> None:
    best = curve(replay, "best", {25: 0.0, 100: 500.0})
    near = curve(replay, "near", {25: 9.0, 100: 498.9})
    others = [curve(replay, f"o{i}", {25: 5.0 + i, 100: 100.0}) for i in range(2)]
    result = replay.replay_round([best, near, *others], 100)
    assert result.kept_best and result.pick.name == "near"
    assert replay.close(result.pick.final, result.best.final)


def test_the_half_way_point_is_where_learning_took_off(replay: ModuleType) -> None:
    takes_off = curve(replay, "x", {10: 0.0, 20: 1.0, 30: 6.0, 40: 10.0})
    assert takes_off.half_way(40) == pytest.approx(0.75)  # 6 of 10 first at step 30
