"""Bradley-Terry scores: a known order recovered from simulated choices, and uncertainty that
shrinks as choices accumulate."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from rewardsmith.judging.scores import fit_scores, ranked, score_line
from rewardsmith.runs.judgements import Judgement

TRUE = {"r00c00": 1.5, "r00c01": 0.5, "r00c02": -0.5, "r00c03": -1.5}


def simulate(rounds: int, seed: int = 0) -> list[Judgement]:
    rng = random.Random(seed)
    found = []
    for _ in range(rounds):
        for a, b in itertools.combinations(TRUE, 2):
            if rng.random() < 0.5:
                a, b = b, a
            p_left = 1 / (1 + math.exp(TRUE[b] - TRUE[a]))
            found.append(Judgement(a, b, "left" if rng.random() < p_left else "right", "t"))
    return found


def test_scores_recover_a_known_order_from_simulated_choices() -> None:
    scores = fit_scores(simulate(40))
    assert [s.key for s in ranked(scores)] == list(TRUE)
    for key, value in TRUE.items():
        assert scores[key].score == pytest.approx(value, abs=0.5)
    assert sum(s.score or 0 for s in scores.values()) == pytest.approx(0, abs=1e-9)


def test_uncertainty_shrinks_with_more_choices() -> None:
    few, many = fit_scores(simulate(3)), fit_scores(simulate(30))
    for key in TRUE:
        assert many[key].stderr is not None and few[key].stderr is not None
        assert many[key].stderr < few[key].stderr / 2
        assert many[key].choices == 10 * few[key].choices


def test_never_compared_candidates_have_no_score() -> None:
    scores = fit_scores([Judgement("a", "b", "left", "t")], ["a", "b", "c"])
    assert scores["c"].score is None and scores["c"].stderr is None and scores["c"].choices == 0
    assert scores["a"].score is not None and scores["a"].score > scores["b"].score  # type: ignore[operator]
    assert score_line(scores["c"]) == "c not compared yet"
    assert score_line(scores["a"]).startswith("a score +")


def test_a_clean_sweep_stays_finite() -> None:
    scores = fit_scores([Judgement("a", "b", "left", "t")] * 20)
    assert all(
        math.isfinite(s.score or 0) and math.isfinite(s.stderr or 0) for s in scores.values()
    )


def test_both_bad_lowers_both_against_the_rest() -> None:
    base = [Judgement("a", "c", "left", "t"), Judgement("c", "a", "right", "t")]
    scores = fit_scores([*base, Judgement("a", "b", "both_bad", "t")] * 3)
    neutral = fit_scores(
        [*base, Judgement("a", "b", "left", "t"), Judgement("b", "a", "left", "t")] * 3
    )
    assert scores["c"].score > neutral["c"].score  # type: ignore[operator]
    assert scores["b"].score < neutral["b"].score  # type: ignore[operator]
