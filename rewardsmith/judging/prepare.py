"""Get a round ready to judge: find it, film its trained candidates that have no video yet, and
open a judging session over them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rewardsmith.judging.pairs import Contestant, round_contestants
from rewardsmith.judging.server import JudgingSession
from rewardsmith.runs.candidate import CandidateStatus
from rewardsmith.runs.judgements import RoundJudgements
from rewardsmith.runs.store import Run, RunStore


def latest_trained_round(run: Run) -> int | None:
    """The last round with a trained candidate, or None where nothing trained yet."""
    rounds = [
        row["round"]
        for row in run.candidates()
        if row.get("status") == CandidateStatus.TRAINED.value
    ]
    return max(rounds) if rounds else None


def film_missing(
    runs_dir: Path,
    run: Run,
    contestants: list[Contestant],
    report: Callable[[str], None] = lambda _: None,
) -> int:
    """Film (in the run's sandbox) every contestant that has no video yet; how many were filmed.
    A candidate that cannot be filmed is reported and left out of the pairs."""
    from rewardsmith.eureka_loop.film_run import film_target

    filmed = 0
    for contestant in contestants:
        if contestant.video is not None or contestant.is_anchor:
            continue
        report(f"filming {contestant.key} ...")
        result = film_target(runs_dir, str(run.path), contestant.key)
        if result.video is None:
            report(f"no video of {contestant.key}: {result.reason}")
        else:
            filmed += 1
    return filmed


def open_session(
    runs_dir: Path,
    run_ref: str,
    round: int | None = None,
    *,
    film: bool = True,
    report: Callable[[str], None] = lambda _: None,
) -> JudgingSession:
    """A judging session over `round` (default: the last with a trained candidate) of the run;
    ValueError where the round has fewer than two videos to compare."""
    run = RunStore(runs_dir).open_run(run_ref)
    try:
        if round is None:
            round = latest_trained_round(run)
            if round is None:
                raise ValueError(f"run {run.run_id} has no trained candidate to judge yet")
        contestants = round_contestants(run, round)
        if film and film_missing(runs_dir, run, contestants, report):
            contestants = round_contestants(run, round)
        playable = [c for c in contestants if c.video is not None]
        if len(playable) < 2:
            raise ValueError(
                f"round {round} of run {run.run_id} has {len(playable)} video(s); judging needs "
                "two or more (a trained candidate that could not be filmed has none)"
            )
        return JudgingSession(
            run_id=run.run_id,
            round=round,
            contestants=contestants,
            files=RoundJudgements(run.path, round),
        )
    finally:
        run.close()
