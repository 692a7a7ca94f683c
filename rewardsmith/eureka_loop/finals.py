"""The finals node: the run's best is chosen on more than one training seed.

The search trains every candidate on one seed and keeps the fittest, so a run of many
candidates tends to keep the one whose seed was luckiest (the winner's curse): a CartPole
candidate at 500 in the search fell to 131 on fresh seeds. After the last round the fittest
few distinct rewards of the run (`--finalists`, the best so far among them) each train on
`--finalist-seeds` more seeds, the same seeds for every finalist (common random numbers: a seed
that is easy for one reward tends to be easy for the others, so the comparison is fairer than on
seeds of their own). The run's best becomes the finalist whose lower bound, the mean over its
finals seeds minus one standard error, is highest: a reward that trains well on one seed in two
loses to one that trains well on both (with two seeds the bound is the worse seed). The search
seed does not count: each finalist is there because that seed went well, so it is biased up.
The final evaluation then retrains the winner on seeds none of this saw, so its verdict is not
biased by this choice either.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from langgraph.runtime import Runtime

from rewardsmith.choices import Fitness
from rewardsmith.eureka_loop.baseline import training_source
from rewardsmith.eureka_loop.evaluation import reward_fingerprint
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateStatus,
    CandidateSummary,
    Context,
    LoopState,
)
from rewardsmith.eureka_loop.trainer import train_in
from rewardsmith.runs.layout import REWARD
from rewardsmith.runs.schema import write_record
from rewardsmith.runs.views import finals_line

FINALS_SEED_BASE = 50_000
"""Finals seeds are `seed + 50_000 + j` for every finalist: apart from the search's
(`seed + round * 1000 + idx`), `--confirm-best`'s (+500) and the final evaluation's
(`seed + 100_000 + j`)."""


@dataclass(frozen=True)
class Finalist:
    """One reward in the finals: its search fitness and what its finals seeds gave."""

    candidate: CandidateKey
    search_fitness: float
    finals_fitness: tuple[float | None, ...] = ()

    @property
    def key(self) -> str:
        """Its candidate key as records show it, `r01c02`."""
        return self.candidate.label

    @property
    def fitnesses(self) -> list[float]:
        """Its finals seeds' fitnesses; a failed finals seed is left out (and `failed`)."""
        return [f for f in self.finals_fitness if f is not None]

    @property
    def failed(self) -> bool:
        """A finals seed that failed to train: a reward that fails on some seeds is no finalist."""
        return any(f is None for f in self.finals_fitness)

    @property
    def mean(self) -> float:
        """Its mean fitness over its finals seeds (-inf where none trained)."""
        return statistics.fmean(self.fitnesses) if self.fitnesses else -math.inf

    @property
    def spread(self) -> float:
        """The standard deviation over its seeds (0 with one seed)."""
        values = self.fitnesses
        return statistics.stdev(values) if len(values) > 1 else 0.0

    @property
    def lower_bound(self) -> float:
        """What the finals rank by: the mean minus one standard error; -inf where a seed failed."""
        if self.failed or not self.fitnesses:
            return -math.inf
        return self.mean - self.spread / math.sqrt(len(self.fitnesses))

    def to_dict(self) -> dict[str, Any]:
        """Its entry in `finals.json`."""
        return {
            "key": self.key,
            "search_fitness": self.search_fitness,
            "finals_fitness": list(self.finals_fitness),
            "mean": None if not self.fitnesses else self.mean,
            "std": self.spread,
            "seeds": len(self.fitnesses),
            "lower_bound": None if self.failed else self.lower_bound,
        }


def contenders(ctx: Context, best: CandidateSummary) -> list[Finalist]:
    """The run's `--finalists` fittest distinct rewards by search fitness, the best so far
    always among them. Distinct by code (comments and layout aside): the same reward twice would
    only take a place. Candidates a halving rung stopped were measured on a shorter training
    and do not compete."""
    rows = [
        row
        for row in ctx.run.candidates()
        if row.get("status") == CandidateStatus.TRAINED
        and row.get("fitness") is not None
        and row.get("rung") is None
    ]
    rows.sort(key=lambda row: (-row["fitness"], CandidateKey.of(row)))
    best_key = CandidateKey.of(best)
    rows.sort(key=lambda row: CandidateKey.of(row) != best_key)  # stable: the best first
    chosen: list[Finalist] = []
    seen: set[str | None] = set()
    for row in rows:
        key = CandidateKey.of(row)
        code = ctx.run.candidate(key).reward_code()
        fingerprint = reward_fingerprint(training_source(code))
        if fingerprint in seen:
            continue
        seen.add(fingerprint)
        chosen.append(Finalist(key, float(row["fitness"])))
        if len(chosen) == ctx.config.finalists:
            break
    return chosen


def finals_seed(ctx: Context, j: int) -> int:
    """The training seed of every finalist's `j`-th finals training."""
    return ctx.config.seed + FINALS_SEED_BASE + j


def play_finals(ctx: Context, field: list[Finalist]) -> list[Finalist]:
    """Train every finalist on its finals seeds (finished ones are reused after a resume)."""
    jobs = [(f, j) for f in field for j in range(ctx.config.finalist_seeds)]

    def one(job: tuple[Finalist, int]) -> float | None:
        finalist, j = job
        files = ctx.run.candidate(finalist.candidate)
        ctx.reporter.candidate(finalist.candidate, "training", f"finals seed {j + 1}")
        source = training_source(files.reward_code())
        outcome = train_in(ctx, files.finals(j), finalist.candidate, source, finals_seed(ctx, j))
        fitness = outcome.get("fitness") if outcome.get("ok") else None
        detail = f"finals seed {j + 1}: " + (
            f"fitness {fitness:.4g}" if fitness is not None else "failed"
        )
        ctx.reporter.candidate(finalist.candidate, "trained", detail)
        return fitness

    results = in_parallel(ctx, one, jobs, "finals")
    played = []
    for finalist in field:
        mine = tuple(r for (f, _), r in zip(jobs, results, strict=True) if f is finalist)
        played.append(Finalist(finalist.candidate, finalist.search_fitness, mine))
    return played


def winner(played: list[Finalist]) -> Finalist:
    """The highest lower bound; the first listed (the search's best) keeps ties."""
    top = played[0]
    for finalist in played[1:]:
        if finalist.lower_bound > top.lower_bound:
            top = finalist
    return top


def finals(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrain the run's fittest few rewards on more seeds and make the most reliable the best.
    Off with `--finalists 1` or `--finalist-seeds 0`, and where selection is by a person's
    choices (`--fitness human|blend`): their verdicts were not made on seeds."""
    ctx = runtime.context
    config = ctx.config
    best = state.get("best")
    if best is None or config.finalists < 2 or config.finalist_seeds < 1:
        return {}
    if config.fitness != Fitness.TASK:
        return {}
    field = contenders(ctx, best)
    if len(field) < 2:
        return {}
    ctx.reporter.message(
        f"finals: {', '.join(f.key for f in field)} train on the same "
        f"{config.finalist_seeds} fresh seed(s); the best becomes the one with the highest mean "
        "minus one standard error over them"
    )
    played = play_finals(ctx, field)
    top = winner(played)
    changed = top.key != played[0].key
    record = {
        "finalists": [f.to_dict() for f in played],
        "search_best": played[0].key,
        "winner": top.key,
        "changed": changed,
    }
    write_record(ctx.run.finals_file, record)
    ctx.reporter.message(finals_line(record))
    new_best: CandidateSummary = best
    if changed:
        new_best = {
            "round": top.candidate.round,
            "idx": top.candidate.idx,
            "status": CandidateStatus.TRAINED,
            "fitness": top.search_fitness,
        }
    ctx.run.update_summary(
        best_candidate=top.key,
        best_reward_path=str(ctx.run.candidate(top.candidate).path / REWARD),
        best_fitness=top.mean if top.fitnesses else top.search_fitness,
        best_fitness_std=top.spread,
        best_fitness_seeds=len(top.fitnesses),
    )
    ctx.reporter.best({"key": top.key, "fitness": top.mean if top.fitnesses else None})
    return {"best": new_best}
