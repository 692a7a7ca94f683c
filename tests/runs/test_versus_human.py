"""The final evaluation's verdict on the best reward against the human one."""

from __future__ import annotations

import pytest

from rewardsmith.runs.versus_human import undefined_score_text, versus_human, versus_human_text


def test_versus_human_judges_the_difference_by_twice_its_standard_error() -> None:
    # Pendulum's table row, one run's seeds: +0.04 with a spread of ~0.01 an arm is beyond it.
    better = versus_human([0.837, 0.833], [0.801, 0.795])
    assert better is not None and better["verdict"] == "better"
    assert better["difference"] == pytest.approx(0.037)
    assert better["two_se"] == pytest.approx(2 * ((0.004**2 / 2 + 0.006**2 / 2) / 2) ** 0.5)
    # Hopper's: the same means within a spread of 0.6 are as good, not better or worse.
    assert (versus_human([1.0, 1.33], [1.57, 0.29]) or {})["verdict"] == "as good"
    assert (versus_human([0.2, 0.3], [1.57, 1.6]) or {})["verdict"] == "worse"
    # One seed an arm has no spread to judge by.
    assert versus_human([1.0], [0.5, 0.6]) is None and versus_human_text(None) is None
    text = versus_human_text(better) or ""
    assert text.startswith("best - human = +0.037 (2 SE ") and "beyond the noise" in text
    assert versus_human_text({"verdict": "best ever", "difference": 1, "two_se": 0}) is None
    assert versus_human_text({"verdict": "better", "difference": "1"}) is None


def test_a_score_without_value_says_why_only_where_human_equals_sparse() -> None:
    text = undefined_score_text(1.0, 1.0) or ""
    assert text.startswith("undefined: the human and the sparse reward both scored 1 ")
    assert undefined_score_text(0.9, 1.0) is None and undefined_score_text(None, 1.0) is None
