"""Bradley-Terry scores from a person's choices between pairs of rollout videos.

Each candidate i has a strength pi_i; i is preferred to j with probability pi_i / (pi_i + pi_j).
The score is theta_i = ln(pi_i): a difference of 1 is odds of e:1 in a comparison.

A virtual **baseline** of fixed strength 1 anchors the fit, and takes two roles:

- "both bad" is a loss of each of the two against the baseline: it says something (both are
  worse than acceptable) and, unlike "no information", moves them both down together;
- every compared candidate starts with one win and one loss against it (a weak prior), so a
  candidate that won or lost every comparison still has a finite score and uncertainty.

The strengths are fitted with Hunter's MM iteration (2004), pi_i <- W_i / sum_j n_ij / (pi_i + pi_j)
(W_i: wins, n_ij: comparisons of i and j, the baseline's included). A score is then given relative
to the mean of the compared candidates (their mean is 0), the scale a person reads a ranking on,
and its standard error is the delta-method one of that centred score, from the inverse Fisher
information of the log-likelihood in theta at the fit: it shrinks as choices accumulate. A
candidate that was never compared gets None for both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rewardsmith.runs.judgements import Judgement

PRIOR_GAMES = 1.0
"""Virtual wins and losses (each) of every compared candidate against the baseline."""


@dataclass(frozen=True)
class Score:
    """One candidate's Bradley-Terry score, its standard error, and how many choices it was in."""

    key: str
    score: float | None
    stderr: float | None
    choices: int
    wins: int = 0


def fit_scores(
    judgements: Iterable[Judgement],
    keys: Sequence[str] = (),
    *,
    iterations: int = 500,
    tolerance: float = 1e-10,
) -> dict[str, Score]:
    """A `Score` per candidate: those in `keys` and any the judgements name, in that order."""
    items = list(judgements)
    names = list(dict.fromkeys([*keys, *(k for j in items for k in (j.left, j.right))]))
    index = {name: i for i, name in enumerate(names)}
    n = len(names)
    wins = np.zeros((n + 1, n + 1))  # wins[i, j]: i preferred to j; row/column n is the baseline
    counted = np.zeros(n, dtype=int)
    won = np.zeros(n, dtype=int)
    for j in items:
        left, right = index[j.left], index[j.right]
        counted[[left, right]] += 1
        if j.choice == "left":
            wins[left, right] += 1
            won[left] += 1
        elif j.choice == "right":
            wins[right, left] += 1
            won[right] += 1
        else:  # both bad: both lose against the baseline
            wins[n, left] += 1
            wins[n, right] += 1
    compared = counted > 0
    for i in np.flatnonzero(compared):
        wins[i, n] += PRIOR_GAMES
        wins[n, i] += PRIOR_GAMES
    strength = _mm(wins, compared, iterations, tolerance)
    theta = np.log(strength[:n])
    if compared.any():
        theta -= theta[compared].mean()
    stderr = _stderr(wins, strength, compared)
    return {
        name: Score(
            key=name,
            score=float(theta[i]) if compared[i] else None,
            stderr=float(stderr[i]) if compared[i] else None,
            choices=int(counted[i]),
            wins=int(won[i]),
        )
        for name, i in index.items()
    }


def _mm(wins: np.ndarray, compared: np.ndarray, iterations: int, tolerance: float) -> np.ndarray:
    """Hunter's MM updates of the strengths, the baseline's (last) held at 1."""
    n = len(compared)
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    strength = np.ones(n + 1)
    active = np.flatnonzero(compared)
    for _ in range(iterations):
        previous = strength.copy()
        for i in active:  # Gauss-Seidel order: each update uses the others' latest strengths
            denominator = float(np.sum(games[i] / (strength[i] + strength)))
            strength[i] = total_wins[i] / denominator
        if np.max(np.abs(np.log(strength[active]) - np.log(previous[active])), initial=0) < (
            tolerance
        ):
            break
    return strength


def _stderr(wins: np.ndarray, strength: np.ndarray, compared: np.ndarray) -> np.ndarray:
    """Standard errors of the centred scores theta_i - mean(theta) (theta = ln(strength)), from the
    Fisher information; the baseline is fixed, so the others' information matrix is invertible."""
    n = len(compared)
    games = wins + wins.T
    p = strength[:, None] / (strength[:, None] + strength[None, :])
    weight = games * p * p.T  # n_ij p_ij (1 - p_ij)
    info = np.diag(weight.sum(axis=1)) - weight
    active = np.flatnonzero(compared)
    errors = np.full(n, np.nan)
    if active.size:
        covariance = np.linalg.inv(info[np.ix_(active, active)])
        centre = np.eye(active.size) - 1.0 / active.size
        covariance = centre @ covariance @ centre.T
        errors[active] = np.sqrt(np.clip(np.diag(covariance), 0, None))
    return errors


def score_line(score: Score) -> str:
    """`r00c01 score +0.80 ± 0.30 (5 choices)`, or that it was never compared."""
    if score.score is None or score.stderr is None:
        return f"{score.key} not compared yet"
    return (
        f"{score.key} score {score.score:+.2f} ± {score.stderr:.2f} "
        f"({score.choices} choice{'s' if score.choices != 1 else ''}, {score.wins} won)"
    )


def ranked(scores: dict[str, Score]) -> list[Score]:
    """Scores best first; candidates never compared last."""
    return sorted(scores.values(), key=lambda s: (s.score is None, -(s.score or 0.0), s.key))
