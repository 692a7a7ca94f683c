"""The evaluate node: retrain the best reward, the human and the sparse reward with fresh seeds.

All three get the same budget, and the human-normalised score
`(F_best - F_sparse) / |F_human - F_sparse|` says whether the found reward beat the shipped one.
Every arm trains with the same seeds, so where the best is the human reward itself (the same code
up to comments and layout, or both the environment's own reward) it is trained once: its seeds
stand for both arms, and the report says so.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.baseline import training_source
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.state import CandidateKey, Context, LoopState
from rewardsmith.eureka_loop.trainer import train_in
from rewardsmith.eureka_loop.videos import film
from rewardsmith.reward.syntax import parse
from rewardsmith.runs.schema import write_record
from rewardsmith.runs.versus_human import held_up, versus_human

EVAL_SEED_BASE = 100_000
EVAL_NAMES = ("best", "human", "sparse")


@dataclass(frozen=True)
class EvalKey:
    """One training of the final evaluation, as reporters hear of it: it reports like a
    candidate, but it is none (no round, no folder in one), so a `CandidateKey` cannot name it."""

    arm: str  # one of EVAL_NAMES
    seed_index: int

    @property
    def label(self) -> str:
        """`human seed 0`: how the live view and the log name it."""
        return f"{self.arm} seed {self.seed_index}"

    def __str__(self) -> str:
        return self.label


def human_normalized(best: float | None, human: float | None, sparse: float | None) -> float | None:
    """Eureka's score, (best - sparse) / |human - sparse|: 0 is the sparse reward's fitness, 1 the
    human reward's when it beats sparse. None when an arm has no fitness or the two tie."""
    if best is None or human is None or sparse is None or abs(human - sparse) < 1e-12:
        return None
    return (best - sparse) / abs(human - sparse)


def reward_fingerprint(source: str | None) -> str | None:
    """What of a reward's source can change training: its syntax tree (comments, blank lines,
    quoting and line breaks are gone). None stands for the environment's own reward; code that
    does not parse is compared as text."""
    if source is None:
        return None
    try:
        return ast.dump(parse(source))
    except SyntaxError:
        return source.strip()


def same_reward(a: str | None, b: str | None) -> bool:
    """Whether two rewards train identically with the same seed: the same code up to comments and
    layout, or both the environment's own reward (None)."""
    if a is None or b is None:
        return a is None and b is None
    return reward_fingerprint(a) == reward_fingerprint(b)


def shared_arm_note(sources: dict[str, str | None]) -> str | None:
    """Why the best arm also stands for the human arm, or None where they differ."""
    if not same_reward(sources["best"], sources["human"]):
        return None
    if sources["best"] is None:
        return "best is the environment's own reward, the human arm here; evaluated once"
    return "best is the human reward; evaluated once"


def _versus_human(report: dict[str, Any], same: bool) -> dict[str, Any] | None:
    """Where one training stands for both arms there is nothing to compare."""
    return None if same else versus_human(report["best"]["per_seed"], report["human"]["per_seed"])


def search_result(ctx: Context, key: CandidateKey) -> list[float]:
    """The best's fitness on its one search seed, where the search trained it: what a run
    without the finals would have picked it on, and what the winner's curse inflates."""
    rows = [r for r in ctx.run.candidates(key.round) if r["idx"] == key.idx]
    return [rows[0]["fitness"]] if rows and rows[0].get("fitness") is not None else []


def evaluate(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrain the run's best, the human and the sparse reward on fresh seeds, so the
    reported score does not rest on the one seed the search trained with."""
    ctx = runtime.context
    best = state.get("best")
    if not ctx.config.evaluate or best is None:
        return {}
    return {"evaluation": evaluate_best(ctx, CandidateKey.of(best))}


def evaluate_best(ctx: Context, key: CandidateKey) -> dict[str, Any]:
    """Train best/human/sparse on the task's (or `--eval-seeds`) fresh seeds each; finished seeds
    are reused."""
    config = ctx.config
    eval_seeds = config.final_seeds(ctx.adapter)
    # None trains on the environment's own reward: the human arm of a task without a human
    # reward file, and the best when that baseline stayed the best.
    sources = {
        "best": training_source(ctx.run.candidate(key).reward_code()),
        "human": ctx.adapter.reward_source("human"),
        "sparse": ctx.adapter.reward_source("sparse"),
    }
    # The same reward with the same seeds is the same training: when the best is the human
    # reward (or the environment's own, standing in for it), its arm stands for the human arm.
    note = shared_arm_note(sources)
    same = note is not None
    ctx.reporter.message(
        f"final evaluation: best, human and sparse rewards, {eval_seeds} seed(s) each"
        + (f" ({note}, for both arms)" if same else "")
    )
    jobs = [
        (name, seed_index)
        for name in sources
        for seed_index in range(eval_seeds)
        if (name != "sparse" or sources["sparse"] is not None) and not (name == "human" and same)
    ]

    def one(job: tuple[str, int]) -> tuple[str, dict[str, Any]]:
        name, seed_index = job
        eval_key = EvalKey(name, seed_index)
        ctx.reporter.candidate(eval_key, "training")
        folder = ctx.run.evaluation_arm(name, seed_index)
        seed = EVAL_SEED_BASE + config.seed + seed_index
        outcome = train_in(ctx, folder, eval_key, sources[name], seed)
        if outcome["ok"]:
            ctx.reporter.candidate(eval_key, "trained", f"fitness {outcome['fitness']:.4g}")
            if seed_index == 0:
                film(ctx, folder, seed)
        else:
            ctx.reporter.candidate(
                eval_key, "failed", f"{outcome['error']['category']}: {outcome['error']['message']}"
            )
        return name, outcome

    results = in_parallel(ctx, one, jobs, "evaluate")
    report: dict[str, Any] = {}
    for name in sources:
        arm = "best" if name == "human" and same else name
        fits = [o["fitness"] for n, o in results if n == arm and o["ok"]]
        report[name] = {
            "fitness": float(np.mean(fits)) if fits else None,
            "fitness_std": float(np.std(fits)) if fits else None,
            "per_seed": fits,
            "failed_seeds": sum(1 for n, o in results if n == arm and not o["ok"]),
            "trained_as": arm,  # "best" for the human arm where the best is the human reward
        }
    score = human_normalized(
        report["best"]["fitness"], report["human"]["fitness"], report["sparse"]["fitness"]
    )
    report["human_normalized_score"] = score
    report["versus_human"] = _versus_human(report, same)
    report["held_up"] = held_up(search_result(ctx, key), report["best"]["per_seed"])
    report["best_is_human_reward"] = same
    report["best_is_env_reward"] = same and sources["best"] is None
    report["note"] = note
    write_record(ctx.run.evaluation_file, report)
    ctx.run.update_summary(
        human_fitness=report["human"]["fitness"],
        sparse_fitness=report["sparse"]["fitness"],
        evaluated_best_fitness=report["best"]["fitness"],
        human_normalized_score=score,
        evaluation_note=note,
    )
    return report
