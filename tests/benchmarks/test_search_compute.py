"""benchmarks/search_compute.py's bookkeeping: seeds add up, budgets never mix."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from tests.benchmarks.scripts import load_script


@pytest.fixture(scope="module")
def search_compute() -> ModuleType:
    return load_script("search_compute")


def arm(seed: int, schedule: str, steps: int, best: float, budget: int = 30_000) -> dict[str, Any]:
    return {
        "task": "pendulum",
        "schedule": schedule,
        "seed": seed,
        "steps_per_candidate": budget,
        "search_steps": steps,
        "search_wall_s": steps / 1000,
        "evaluated_best_fitness": best,
        "evaluated_best_std": 0.01,
        "evaluated_best_per_seed": [best, best],
    }


def measurement(seeds: list[int]) -> dict[str, Any]:
    return {
        "measured": "2026-12-04T10:00+00:00",
        "machine": "test",
        "command": "benchmarks/search_compute.py",
        "rounds": 3,
        "samples": 4,
        "seeds": seeds,
        "eval_seeds": 2,
    }


def test_a_later_seed_adds_to_the_row_and_a_rerun_seed_replaces_its_arms(
    search_compute: ModuleType,
) -> None:
    data = {"tasks": [], "arms": []}
    data = search_compute.merge(
        data, "pendulum", [arm(0, "full", 100, 0.8), arm(0, "halving", 40, 0.8)], measurement([0])
    )
    data = search_compute.merge(
        data, "pendulum", [arm(1, "full", 100, 0.8), arm(1, "halving", 60, 0.5)], measurement([1])
    )
    (row,) = data["tasks"]
    assert row["seeds"] == [0, 1]
    assert row["steps"] == {"full": 200, "halving": 100}
    assert row["steps_ratio"] == pytest.approx(0.5)
    assert row["same_best_on_seeds"] == "1 of 2"  # seed 1's halving best fell short
    # ... and pooled over both seeds' evaluations, by 0.15 against a noise of 2 SE = 0.17
    assert row["halving_vs_full"]["difference"] == pytest.approx(-0.15)
    assert row["halving_vs_full"]["two_se"] == pytest.approx(2 * (0.03 / 4) ** 0.5)
    assert row["halving_vs_full"]["verdict"] == "as good"
    assert [m["seeds"] for m in row["measurements"]] == [[0], [1]]

    data = search_compute.merge(
        data, "pendulum", [arm(1, "full", 100, 0.8), arm(1, "halving", 50, 0.8)], measurement([1])
    )
    (row,) = data["tasks"]
    assert len(data["arms"]) == 4
    assert row["steps"] == {"full": 200, "halving": 90}
    assert row["same_best_on_seeds"] == "2 of 2"
    assert [m["seeds"] for m in row["measurements"]] == [[0], [1]]


def test_seeds_at_another_budget_are_refused_with_what_to_do(search_compute: ModuleType) -> None:
    data = search_compute.merge(
        {"tasks": [], "arms": []},
        "pendulum",
        [arm(0, "full", 100, 0.8), arm(0, "halving", 40, 0.8)],
        measurement([0]),
    )
    reduced = [arm(1, "full", 100, 0.8, budget=10_000), arm(1, "halving", 40, 0.8, budget=10_000)]
    with pytest.raises(SystemExit, match="--steps"):
        search_compute.merge(data, "pendulum", reduced, measurement([1]))
    assert len(data["arms"]) == 2  # the stored rows are untouched
