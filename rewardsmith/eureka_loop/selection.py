"""The select node and the routing after it: best by fitness (never by the candidate's own reward),
the task's or a person's as `--fitness` says (`selection_rule.py`)."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from rewardsmith.choices import Fitness, Judge
from rewardsmith.eureka_loop.judge import disagreement
from rewardsmith.eureka_loop.selection_rule import SelectionRule, human_scores
from rewardsmith.eureka_loop.selection_rule import compared_fitness as _fitness
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateStatus,
    CandidateSummary,
    Context,
    LoopState,
    search_seed,
)
from rewardsmith.eureka_loop.videos import film_candidate
from rewardsmith.runs.layout import REWARD, ROUND_SUMMARY, round_file

SELECTION_MARGIN = 0.02
"""A candidate replaces the best so far (or, within a round, an earlier candidate: the offline
designer's first is the unchanged human reward) only if it is fitter by this share of the spread
of fitness seen in the run. One training seed per candidate makes fitness noisy, and on a task
that saturates (CartPole's 500 steps) a near-tie must not crown a lucky mutant over the
incumbent: measured, such picks (500 vs the human reward's 494, and 500 vs 499.9) fell to 341
and 453 in the final evaluation with fresh seeds while the human reward held 500."""


CONFIRM_SEED_OFFSET = 500
"""`--confirm-best` trains a would-be new best again with its search seed plus this (search
seeds are `seed + round * 1000 + idx`, and the final evaluation's start at `seed + 100_000`)."""


def _margin(ctx: Context) -> float:
    seen = [c["fitness"] for c in ctx.run.candidates() if c.get("fitness") is not None]
    return SELECTION_MARGIN * (max(seen) - min(seen)) if len(seen) > 1 else 0.0


def selection_rule(ctx: Context, round_: int) -> SelectionRule:
    """The rule that selects round `round_` (`--fitness`), with the run's noise margin and, for
    `human` and `blend`, the round's human scores as stored so far."""
    fitness = ctx.config.fitness
    scores = human_scores(ctx.run.path, round_) if fitness != Fitness.TASK else {}
    return SelectionRule(fitness, _margin(ctx), scores)


def round_leader(
    ctx: Context, round_: int, trained: list[CandidateSummary]
) -> CandidateSummary | None:
    """The candidate `select` will call the round's best (before any `--confirm-best`), for
    the analyzer's one LLM summary."""
    return selection_rule(ctx, round_).pick(None, _finalists(trained))[0]


def select(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Pick the round's best and the run's by the reward-free fitness (never the candidate's
    own reward) or the person's choices (`--fitness`, `selection_rule.py`), keeping ties with
    the incumbent, and decide whether the run goes on."""
    ctx = runtime.context
    round_, attempt = state.get("round", 0), state.get("attempt", 0)
    candidates = state.get("candidates", [])
    trained = [c for c in candidates if c.get("status") == CandidateStatus.TRAINED]
    finalists = _finalists(trained)
    rule = selection_rule(ctx, round_)
    incumbent = state.get("best")
    round_best, best = rule.pick(incumbent, finalists)
    if ctx.config.confirm_best and round_best is not None and best is round_best:
        confirmed = _confirm(ctx, round_best)
        finalists = [confirmed if c is round_best else c for c in finalists]
        round_best, best = confirmed, rule.settle(incumbent, confirmed, finalists)
    if not rule.by_people(finalists):
        _report_near_ties(ctx, finalists, best, rule.margin)
    if round_best is not None:
        film_candidate(ctx, round_best)
    entry = {
        **_round_entry(round_, attempt, candidates, round_best, best),
        **_judge_entry(ctx, finalists, round_best, best),
        **_human_entry(ctx, rule, finalists),
    }
    ctx.run.write_round_file(round_, round_file(ROUND_SUMMARY, attempt), entry)
    _record_best(ctx, best, entry["best"])
    ctx.run.update_summary(rounds_done=round_ + 1)
    stop = _stop_reason(ctx, state.get("stop_reason"), best)
    next_step = _next_step(ctx, stop, round_, attempt, any_trained=bool(trained))
    return {"best": best, "history": [entry], **next_step}


def _confirm(ctx: Context, challenger: CandidateSummary) -> CandidateSummary:
    """Train a would-be new best once more on a second seed (reused after a resume), so that a
    lucky seed does not take over: selection then compares the mean of both trainings."""
    if "confirm_fitness" in challenger:
        return challenger
    from rewardsmith.eureka_loop.baseline import training_source
    from rewardsmith.eureka_loop.trainer import train_in

    key = CandidateKey.of(challenger)
    files = ctx.run.candidate(key)
    seed = search_seed(ctx.config, key) + CONFIRM_SEED_OFFSET
    source = training_source(files.reward_code())
    outcome = train_in(ctx, files.confirmation(), key, source, seed)
    confirmed = dict(challenger)
    confirmed["confirm_fitness"] = outcome.get("fitness") if outcome.get("ok") else None
    if confirmed["confirm_fitness"] is None:
        error = (outcome.get("error") or {}).get("message", "no fitness")
        ctx.reporter.message(
            f"{key}: the confirming training failed ({error}); its fitness counts as none"
        )
    else:
        ctx.reporter.message(
            f"{key}: fitness {challenger['fitness']:.4g} on its search seed, "
            f"{confirmed['confirm_fitness']:.4g} on a second; "
            f"compared as their mean {_fitness(confirmed):.4g}"  # type: ignore[arg-type]
        )
    return confirmed  # type: ignore[return-value]


def _judge_entry(
    ctx: Context,
    finalists: list[CandidateSummary],
    round_best: CandidateSummary | None,
    best: CandidateSummary | None,
) -> dict[str, Any]:
    """With `--judge vlm`: whether the video judge disagrees with the fitness this round (said
    once, in a message); selection stays on fitness either way."""
    if ctx.config.judge != Judge.VLM:
        return {}
    note = disagreement(ctx, finalists, round_best, best)
    if note is not None:
        ctx.reporter.message(note)
    return {"judge_disagrees": note is not None, "judge_note": note}


def _human_entry(
    ctx: Context, rule: SelectionRule, finalists: list[CandidateSummary]
) -> dict[str, Any]:
    """With `--fitness human|blend`: what selection ranked by this round, the human scores it
    saw, and any fallback to task fitness (each also said in a message)."""
    if rule.fitness == Fitness.TASK:
        return {}
    for note in rule.notes:
        ctx.reporter.message(note)
    return {
        "fitness": str(rule.fitness),
        "selected_on": str(rule.fitness) if rule.by_people(finalists) else str(Fitness.TASK),
        "human_scores": {key: round(score, 4) for key, score in rule.human.items()},
        "selection_note": "; ".join(rule.notes) or None,
    }


def _recorded_fitness(candidate: CandidateSummary | None) -> float | None:
    """The compared fitness as records show it: None where there is none (a failed confirmation)."""
    if candidate is None or _fitness(candidate) == float("-inf"):
        return None
    return _fitness(candidate)


def _finalists(trained: list[CandidateSummary]) -> list[CandidateSummary]:
    """The trained candidates that compete for the best. Under the halving schedule only the
    full budget's fitness competes: a candidate stopped at a shorter rung was measured on a
    shorter training."""
    return [c for c in trained if c.get("stopped_at_rung") is None]


def _report_near_ties(
    ctx: Context, finalists: list[CandidateSummary], best: CandidateSummary | None, margin: float
) -> None:
    """Say which fitter candidates lost to `best` only by the noise margin, so that a pick
    below the round's top fitness is not mistaken for a bug."""
    if best is None:
        return
    for c in finalists:
        if c is not best and _fitness(best) < _fitness(c) <= _fitness(best) + margin:
            ctx.reporter.message(
                f"{CandidateKey.of(c).label} ({c['fitness']:.4g}) is within the noise "
                f"margin ({margin:.3g}) of {CandidateKey.of(best).label} "
                f"({best['fitness']:.4g}); keeping the latter"
            )


def _round_entry(
    round_: int,
    attempt: int,
    candidates: list[CandidateSummary],
    round_best: CandidateSummary | None,
    best: CandidateSummary | None,
) -> dict[str, Any]:
    """The round's record (its summary file and history entry): what happened to its
    candidates, and the round's and the run's best after it."""
    return {
        "round": round_,
        "attempt": attempt,
        **{
            status.value: _count_status(candidates, status)
            for status in (
                CandidateStatus.TRAINED,
                CandidateStatus.REJECTED,
                CandidateStatus.FAILED,
            )
        },
        "round_best": _key(round_best),
        "round_best_fitness": round_best.get("fitness") if round_best else None,
        "round_best_confirm_fitness": round_best.get("confirm_fitness") if round_best else None,
        "best": _key(best),
        "best_fitness": _recorded_fitness(best),
    }


def _count_status(candidates: list[CandidateSummary], status: CandidateStatus) -> int:
    """How many of the round's candidates ended with `status` (trained, rejected or failed)."""
    return sum(c.get("status") == status for c in candidates)


def _key(candidate: CandidateSummary | None) -> str | None:
    """The candidate's key (`r02c01`) as records show it, or None where there is none."""
    return CandidateKey.of(candidate).label if candidate else None


def _record_best(ctx: Context, best: CandidateSummary | None, key: str | None) -> None:
    """Put the run's best in the run summary and tell the reporter, so that a run stopped
    after this round still says which reward to use."""
    if best is None:
        return
    best_path = ctx.run.candidate(CandidateKey.of(best)).path / REWARD
    ctx.run.update_summary(
        best_fitness=_recorded_fitness(best),
        best_reward_path=str(best_path),
        best_candidate=key,
    )
    ctx.reporter.best({"key": key, "fitness": _recorded_fitness(best)})


def _stop_reason(ctx: Context, stop: str | None, best: CandidateSummary | None) -> str | None:
    """Why the run stops after this round, if it does: a reason already given (a budget that
    stopped the designer), the fitness target reached, or the LLM budget spent."""
    if stop is not None:
        return stop
    target = ctx.config.fitness_target
    if target is not None and best is not None and _fitness(best) >= target:
        return f"fitness target {target} reached"
    if ctx.budget is not None and (spent := ctx.budget.exceeded()):
        return f"budget: {spent}"
    return None


def _next_step(
    ctx: Context, stop: str | None, round_: int, attempt: int, *, any_trained: bool
) -> dict[str, Any]:
    """The state update that routes the run on: the same round again when nothing trained
    (up to `round_retries` times: such a round has no fitness to select by), else the next
    round, else the stop with its reason."""
    if stop is None and not any_trained and attempt < ctx.config.round_retries:
        ctx.reporter.message(
            f"round {round_}: no candidate trained; repeating the round (attempt {attempt + 2})"
        )
        return {"attempt": attempt + 1}
    if stop is None and round_ + 1 < ctx.config.rounds:
        return {"round": round_ + 1, "attempt": 0}
    return {"stop_reason": stop or f"completed {ctx.config.rounds} rounds"}


def after_design(state: LoopState) -> Literal["critique", "finals", "__end__"]:
    """After design: check the candidates, or end (the finals and the final evaluation of the
    best so far) when a budget stopped the designer."""
    if state.get("stop_reason"):
        return "finals" if state.get("best") else "__end__"
    return "critique"


def after_select(state: LoopState) -> Literal["design", "finals", "__end__"]:
    """After select: another round, or the finals and the final evaluation, or the end."""
    if not state.get("stop_reason"):
        return "design"
    return "finals" if state.get("best") else "__end__"
