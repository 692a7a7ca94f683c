"""The select node and the routing after it: best by fitness (never by the candidate's own reward)."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.state import CandidateSummary, Context, LoopState, candidate_key

SELECTION_MARGIN = 0.02
"""A candidate replaces the best so far (or, within a round, an earlier candidate: the offline
designer's first is the unchanged human reward) only if it is fitter by this share of the spread
of fitness seen in the run. One training seed per candidate makes fitness noisy, and on a task
that saturates (CartPole's 500 steps) a near-tie must not crown a lucky mutant over the
incumbent: measured, such picks (500 vs the human reward's 494, and 500 vs 499.9) fell to 341
and 453 in the final evaluation with fresh seeds while the human reward held 500."""


def _fitness(candidate: CandidateSummary) -> float:
    fitness = candidate.get("fitness")
    return float("-inf") if fitness is None else float(fitness)


def _better(
    a: CandidateSummary | None, b: CandidateSummary | None, margin: float = 0.0
) -> CandidateSummary | None:
    """`b` if it beats `a` by more than `margin`, else `a` (the incumbent keeps near-ties)."""
    if a is None:
        return b
    if b is None:
        return a
    return b if _fitness(b) > _fitness(a) + margin else a


def pick_best(
    incumbent: CandidateSummary | None, trained: list[CandidateSummary], margin: float
) -> tuple[CandidateSummary | None, CandidateSummary | None]:
    """The round's best (earlier candidates keep near-ties) and the run's best after it."""
    round_best = None
    for candidate in sorted(trained, key=lambda c: c["idx"]):
        round_best = _better(round_best, candidate, margin)
    return round_best, _better(incumbent, round_best, margin)


def _margin(ctx: Context) -> float:
    seen = [c["fitness"] for c in ctx.run.candidates() if c.get("fitness") is not None]
    return SELECTION_MARGIN * (max(seen) - min(seen)) if len(seen) > 1 else 0.0


def select(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Pick the round's best and the run's by the reward-free fitness (never the candidate's
    own reward), keeping near-ties with the incumbent, and decide whether the run goes on."""
    ctx = runtime.context
    round_, attempt = state.get("round", 0), state.get("attempt", 0)
    candidates = state.get("candidates", [])
    trained = [c for c in candidates if c.get("status") == "trained"]
    # Under the halving schedule only the full budget's fitness competes for the best: a
    # candidate stopped at a shorter rung was measured on a shorter training.
    finalists = [c for c in trained if c.get("stopped_at_rung") is None]
    margin = _margin(ctx)
    round_best, best = pick_best(state.get("best"), finalists, margin)
    for c in finalists:
        if best is not None and c is not best and _fitness(best) < _fitness(c):
            ctx.reporter.message(
                f"{candidate_key(c['round'], c['idx'])} ({c['fitness']:.4g}) is within the noise "
                f"margin ({margin:.3g}) of {candidate_key(best['round'], best['idx'])} "
                f"({best['fitness']:.4g}); keeping the latter"
            )
    entry = {
        "round": round_,
        "attempt": attempt,
        "trained": len(trained),
        "rejected": sum(c.get("status") == "rejected" for c in candidates),
        "failed": sum(c.get("status") == "failed" for c in candidates),
        "round_best": candidate_key(round_best["round"], round_best["idx"]) if round_best else None,
        "round_best_fitness": round_best.get("fitness") if round_best else None,
        "best": candidate_key(best["round"], best["idx"]) if best else None,
        "best_fitness": best.get("fitness") if best else None,
    }
    ctx.run.write_round_file(round_, f"summary_a{attempt}.json", entry)
    update: dict[str, Any] = {"best": best, "history": [entry]}
    if best is not None:
        best_path = ctx.run.candidate_dir(best["round"], best["idx"]) / "reward.py"
        ctx.run.update_summary(
            best_fitness=best.get("fitness"),
            best_reward_path=str(best_path),
            best_candidate=entry["best"],
        )
        ctx.reporter.best({"key": entry["best"], "fitness": best.get("fitness")})
    ctx.run.update_summary(rounds_done=round_ + 1)
    stop = state.get("stop_reason")
    target = ctx.config.fitness_target
    if stop is None and target is not None and best is not None and _fitness(best) >= target:
        stop = f"fitness target {target} reached"
    if stop is None and ctx.budget is not None and ctx.budget.exceeded():
        stop = f"budget: {ctx.budget.exceeded()}"
    if stop is None and not trained and attempt < ctx.config.round_retries:
        ctx.reporter.message(
            f"round {round_}: no candidate trained; repeating the round (attempt {attempt + 2})"
        )
        update.update(attempt=attempt + 1)
    elif stop is None and round_ + 1 < ctx.config.rounds:
        update.update(round=round_ + 1, attempt=0)
    else:
        update["stop_reason"] = stop or f"completed {ctx.config.rounds} rounds"
    return update


def after_design(state: LoopState) -> Literal["critique", "evaluate", "__end__"]:
    """After design: check the candidates, or end (evaluating the best so far) when a budget
    stopped the designer."""
    if state.get("stop_reason"):
        return "evaluate" if state.get("best") else "__end__"
    return "critique"


def after_select(state: LoopState) -> Literal["design", "evaluate", "__end__"]:
    """After select: another round, or the final evaluation, or the end."""
    if not state.get("stop_reason"):
        return "design"
    return "evaluate" if state.get("best") else "__end__"
