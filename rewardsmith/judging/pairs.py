"""Which two rollout videos to show next, so each click teaches the most.

The contestants are a round's trained candidates that have a video and two anchors: the
incumbent, the run's best before this round (from an earlier round), and the human reward's video
from the final evaluation where the run has one (`evaluation/human`). A known reference puts the
round's candidates on a scale a person recognises; the incumbent, compared on the same page, is
what makes a round's scores comparable with the best so far, so that `--fitness human|blend` can
decide whether a new candidate takes over (`eureka_loop/selection_rule.py`).

The next pair is the unjudged pair closest in current Bradley-Terry score (a comparison of two
near-equals is the least predictable, so it teaches the most); among equally close pairs, the one
whose members were compared least, then one with an anchor, then by fitness closeness. Each pair
is shown at most once per round, whichever side each member was on.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rewardsmith.judging.scores import Score, fit_scores
from rewardsmith.runs.candidate import CandidateStatus
from rewardsmith.runs.judgements import Judgement
from rewardsmith.runs.layout import REWARD_COPIES
from rewardsmith.runs.store import Run
from rewardsmith.runs.views import RunView, load_view

HUMAN_ANCHOR = "evaluation/human"
"""The key of the human reward's video (the final evaluation's first seed) among contestants."""


@dataclass(frozen=True)
class Contestant:
    """One video a person can judge: its key, the MP4, the policy's fitness, the reward code."""

    key: str
    video: Path | None
    fitness: float | None
    code: str | None
    is_anchor: bool = False
    is_incumbent: bool = False

    @property
    def label(self) -> str:
        """The key as the page shows it, with the role of an anchor."""
        if self.is_anchor:
            return f"{self.key} (the human reward)"
        if self.is_incumbent:
            return f"{self.key} (the best so far)"
        return self.key


def incumbent_before(view: RunView, round: int) -> str | None:
    """The run's best before `round`: the best the last selection of an earlier round chose."""
    chosen = [
        r.summary["best"]
        for r in view.rounds
        if r.round < round and r.summary is not None and r.summary.get("best")
    ]
    return str(chosen[-1]) if chosen else None


def round_contestants(run: Run, round: int, *, anchor: bool = True) -> list[Contestant]:
    """The incumbent (the run's best before the round) and the trained candidates of `round`,
    in key order, with or without a video yet; then the human anchor where the final evaluation
    filmed one."""
    view = load_view(run)
    incumbent = incumbent_before(view, round)
    found = [
        Contestant(
            key=c.key,
            video=c.files.video(),
            fitness=c.fitness,
            code=c.code(),
            is_incumbent=c.key == incumbent,
        )
        for c in view.candidates
        if (c.round == round or c.key == incumbent) and c.status == CandidateStatus.TRAINED.value
    ]
    human = run.evaluation_arm("human", 0)
    if anchor and human.video() is not None:
        outcome = human.outcome() or {}
        fitness = outcome.get("fitness")
        found.append(
            Contestant(
                key=HUMAN_ANCHOR,
                video=human.video(),
                fitness=float(fitness) if isinstance(fitness, int | float) else None,
                code=_human_code(run.path),
                is_anchor=True,
            )
        )
    return found


def judged_pairs(judgements: Iterable[Judgement]) -> set[frozenset[str]]:
    """The pairs already judged (unordered)."""
    return {j.pair for j in judgements}


def open_pairs(
    contestants: Sequence[Contestant], judgements: Iterable[Judgement]
) -> list[tuple[Contestant, Contestant]]:
    """Every pair of contestants with videos not judged yet, in key order."""
    done = judged_pairs(judgements)
    playable = [c for c in contestants if c.video is not None]
    return [
        (a, b)
        for a, b in itertools.combinations(playable, 2)
        if frozenset((a.key, b.key)) not in done
    ]


def remaining(contestants: Sequence[Contestant], judgements: Iterable[Judgement]) -> int:
    """How many pairs are left to judge this round."""
    return len(open_pairs(contestants, judgements))


def next_pair(
    contestants: Sequence[Contestant],
    judgements: Sequence[Judgement],
    scores: dict[str, Score] | None = None,
) -> tuple[Contestant, Contestant] | None:
    """The pair to show next, as (left, right), or None when every pair was judged.

    Sides alternate with the number of choices so far, so no candidate is always on one side.
    """
    candidates = open_pairs(contestants, judgements)
    if not candidates:
        return None
    if scores is None:
        scores = fit_scores(judgements, [c.key for c in contestants])
    spread = _fitness_spread(contestants)

    def value(key: str) -> float:
        score = scores.get(key)
        return 0.0 if score is None or score.score is None else score.score

    def count(key: str) -> int:
        score = scores.get(key)
        return 0 if score is None else score.choices

    def order(pair: tuple[Contestant, Contestant]) -> tuple[float, int, int, float, str, str]:
        a, b = pair
        gap = 0.0
        if a.fitness is not None and b.fitness is not None and spread > 0:
            gap = abs(a.fitness - b.fitness) / spread
        return (
            round(abs(value(a.key) - value(b.key)), 6),
            count(a.key) + count(b.key),
            0 if any((a.is_anchor, a.is_incumbent, b.is_anchor, b.is_incumbent)) else 1,
            gap,
            a.key,
            b.key,
        )

    left, right = min(candidates, key=order)
    if len(judgements) % 2:
        left, right = right, left
    return left, right


def _fitness_spread(contestants: Sequence[Contestant]) -> float:
    values = [c.fitness for c in contestants if c.fitness is not None and math.isfinite(c.fitness)]
    return max(values) - min(values) if len(values) > 1 else 0.0


def _human_code(run_path: Path) -> str | None:
    """The human reward's code where the run keeps a copy (task-file runs), else None."""
    copy = run_path / REWARD_COPIES["human_reward"]
    return copy.read_text(encoding="utf-8") if copy.is_file() else None
