"""The one rule that picks a round's best and the run's best (`--fitness task|human|blend`).

- **task** (the default): the task's reward-free fitness (the mean of both seeds once a candidate
  was confirmed, `--confirm-best`). A candidate replaces the one before it (an earlier candidate
  of the round, or the incumbent: the run's best so far) only if it is fitter by the noise margin
  (`selection.SELECTION_MARGIN`).
- **human**: the Bradley-Terry scores of the person's choices on the round's judging page
  (REvolve's fitness). Candidates the person compared rank above those never shown in a judged
  pair; equal scores go to the higher task fitness, then to the earlier candidate.
- **blend**: each candidate has a rank by task fitness and a rank by human score (1 = best; tied
  values share the mean of their places; every candidate never compared shares the last human
  places); the lowest mean of the two ranks wins, ties to the higher task fitness, then to the
  earlier candidate.

Human scores are fitted per round and centred on that round's contestants, so a score alone
means nothing in another round. The judging page therefore shows the incumbent beside the
round's new candidates (`judging.pairs.round_contestants`): the person's choices put it and the
challengers on one scale, and the run's best changes only when the round's best ranks strictly
above the incumbent in that round's fit. Where the person never compared the incumbent, the two
are weighed on task fitness (with the margin); where no candidate of the round was compared (a
timeout or Ctrl-C before any choice), the whole round is selected on task fitness. Each such
fallback is a note the round summary keeps and the run prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rewardsmith.choices import Fitness
from rewardsmith.eureka_loop.state import CandidateKey, CandidateSummary
from rewardsmith.judging.scores import fit_scores
from rewardsmith.runs.judgements import RoundJudgements

Order = tuple[float, ...]
"""A candidate's place under the rule: lower is better, compared element by element."""


def compared_fitness(candidate: CandidateSummary) -> float:
    """The task fitness selection compares: the mean over both seeds once a candidate was
    confirmed; -inf where there is none (a failed training or confirmation)."""
    fitness = candidate.get("fitness")
    if fitness is None:
        return float("-inf")
    if "confirm_fitness" not in candidate:
        return float(fitness)
    second = candidate["confirm_fitness"]
    return float("-inf") if second is None else (float(fitness) + float(second)) / 2


def better(
    a: CandidateSummary | None, b: CandidateSummary | None, margin: float = 0.0
) -> CandidateSummary | None:
    """`b` if its task fitness beats `a`'s by more than `margin`, else `a` (the incumbent keeps
    near-ties)."""
    if a is None:
        return b
    if b is None:
        return a
    return b if compared_fitness(b) > compared_fitness(a) + margin else a


def pick_best(
    incumbent: CandidateSummary | None, trained: list[CandidateSummary], margin: float
) -> tuple[CandidateSummary | None, CandidateSummary | None]:
    """On task fitness: the round's best (earlier candidates keep near-ties) and the run's best
    after it."""
    round_best = None
    for candidate in sorted(trained, key=lambda c: c["idx"]):
        round_best = better(round_best, candidate, margin)
    return round_best, better(incumbent, round_best, margin)


def human_scores(run_path: Path, round_: int) -> dict[str, float]:
    """The Bradley-Terry score of every contestant the person compared on round `round_`'s
    judging page, by key (the incumbent's included where it was on the page)."""
    scores = fit_scores(RoundJudgements(run_path, round_).judgements())
    return {key: s.score for key, s in scores.items() if s.score is not None}


@dataclass
class SelectionRule:
    """How one round is selected: the fitness asked for, the noise margin on task fitness, and
    the round's human scores (compared contestants only). `notes` collects what fell back to
    task fitness, and why."""

    fitness: Fitness
    margin: float = 0.0
    human: Mapping[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def by_people(self, finalists: Sequence[CandidateSummary]) -> bool:
        """Whether the person's choices decide: `--fitness human|blend` and at least one of the
        round's finalists compared."""
        return self.fitness != Fitness.TASK and any(_key(c) in self.human for c in finalists)

    def pick(
        self, incumbent: CandidateSummary | None, finalists: list[CandidateSummary]
    ) -> tuple[CandidateSummary | None, CandidateSummary | None]:
        """The round's best among `finalists`, and the run's best after the round."""
        finalists = sorted(finalists, key=lambda c: c["idx"])
        if not self.by_people(finalists):
            if self.fitness != Fitness.TASK and finalists:
                self.notes.append(
                    f"round {finalists[0]['round']}: no human choice about its candidates; "
                    "selected on task fitness"
                )
            return pick_best(incumbent, finalists, self.margin)
        order = self._order(finalists, incumbent)
        round_best = min(finalists, key=lambda c: order[_key(c)])
        return round_best, self.settle(incumbent, round_best, finalists)

    def settle(
        self,
        incumbent: CandidateSummary | None,
        challenger: CandidateSummary | None,
        finalists: list[CandidateSummary],
    ) -> CandidateSummary | None:
        """The run's best after the round: `challenger` (the round's best) or the incumbent,
        which keeps ties."""
        if incumbent is None or challenger is None or not self.by_people(finalists):
            return better(incumbent, challenger, self.margin)
        if _key(incumbent) not in self.human:
            self.notes.append(
                f"the best so far, {_key(incumbent)}, was not compared on round "
                f"{challenger['round']}'s page; it and {_key(challenger)} were weighed on task "
                "fitness"
            )
            return better(incumbent, challenger, self.margin)
        order = self._order(finalists, incumbent)
        return challenger if order[_key(challenger)] < order[_key(incumbent)] else incumbent

    def _order(
        self, finalists: Sequence[CandidateSummary], incumbent: CandidateSummary | None
    ) -> dict[str, Order]:
        """Each finalist's place (and the incumbent's, where the person compared it)."""
        pool = list(finalists)
        if incumbent is not None and _key(incumbent) in self.human:
            pool.append(incumbent)
        task = {_key(c): compared_fitness(c) for c in pool}
        human = {key: self.human.get(key, float("-inf")) for key in task}
        if self.fitness == Fitness.BLEND:
            task_rank, human_rank = _ranks(task), _ranks(human)
            return {key: ((task_rank[key] + human_rank[key]) / 2, -task[key]) for key in task}
        return {key: (-human[key], -task[key]) for key in task}


def _ranks(values: Mapping[str, float]) -> dict[str, float]:
    """1 for the highest value, 2 for the next...; tied values share the mean of their places."""
    ordered = sorted(values.values(), reverse=True)
    return {
        key: ordered.index(value) + (ordered.count(value) + 1) / 2 for key, value in values.items()
    }


def _key(candidate: CandidateSummary) -> str:
    return CandidateKey.of(candidate).label
