"""The Trajectory Analyzer node: turns training statistics and rollouts into feedback.

For each trained candidate (after Eureka's reward reflection and Auto MC-Reward's analyzer):

- every reward component, the fitness, success rate and episode length at the checkpoints (lists
  plus max/mean/min), with advice where the numbers call for it;
- how the evaluation episodes ended (terminated vs time-out, and which state field was at an
  extreme when they terminated);
- which state fields differ most between failed and successful (or low- and high-fitness)
  episodes, as standardised mean differences;
- how each component moved from the first to the last checkpoint;
- reward-hacking flags (`hacking.py`): reward vs fitness on the trajectory bank and over training;
- with `analyzer_llm`, an LLM summary of likely failure causes with suggested fixes, for the
  round's best candidate only (the only new candidate whose reflection the next prompt can carry);
- with `--judge vlm`, the video judge's verdict on the fittest candidates (`judge.py`, run first).

The facts go into the reflection (the next round's prompt) and into the candidate's analysis.json.
Afterwards the trained policies' evaluation episodes join the trajectory bank.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from rewardsmith import job_spec as job_files
from rewardsmith.eureka_loop.bank import (
    Record,
    TrajectoryBank,
    bank_for,
    episode_features,
    seed_bank,
)
from rewardsmith.eureka_loop.hacking import (
    bank_signals,
    combine,
    hacking_suspects,
    training_signals,
)
from rewardsmith.eureka_loop.human_judging import wait_for_person
from rewardsmith.eureka_loop.judge import judge_feedback, judge_round
from rewardsmith.eureka_loop.llm import BudgetExceededError, LLMUnavailableError
from rewardsmith.eureka_loop.replies import reply_record
from rewardsmith.eureka_loop.selection import round_leader
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateStatus,
    CandidateSummary,
    Context,
    LoopState,
)
from rewardsmith.jobs.records import read_trajectories
from rewardsmith.prompts import render
from rewardsmith.runs import layout
from rewardsmith.runs.candidate import CandidateFiles
from rewardsmith.sandbox.worker_files import WorkerFileError

NEAR_ZERO_SUCCESS = 0.05
FLAT_RELATIVE_RANGE = 0.05
DOMINANCE_RATIO = 10.0
EXTREME_Z = 2.0  # a final field value this many bank stds from the mean "ended" the episode
FIELDS_REPORTED = 3
MIN_GROUP = 2


def _series_line(name: str, values: list[float]) -> str:
    shown = ", ".join(f"{v:.3g}" for v in values)
    mean = float(np.mean(values))
    return f"{name}: [{shown}], max {max(values):.3g}, mean {mean:.3g}, min {min(values):.3g}"


def advice_for(checkpoints: list[dict[str, Any]], has_success: bool) -> list[str]:
    """Eureka-style guidance derived from the numbers, so the designer acts on them."""
    advice: list[str] = []
    if has_success:
        success = [c.get("success_rate") or 0.0 for c in checkpoints]
        if max(success) < NEAR_ZERO_SUCCESS:
            advice.append(
                "The success rate stayed near zero: the reward does not lead to the goal. "
                "Rewrite it rather than tune it."
            )
    components = {
        name: [c["components"].get(name, 0.0) for c in checkpoints]
        for name in checkpoints[-1].get("components", {})
    }
    for name, values in components.items():
        spread = max(values) - min(values)
        scale = max(abs(float(np.mean(values))), 1e-9)
        if spread < FLAT_RELATIVE_RANGE * scale or spread < 1e-9:
            advice.append(
                f"Component `{name}` hardly changed during training: the agent cannot move it. "
                "Rescale it, reshape it, or drop it."
            )
    magnitudes = {name: abs(float(np.mean(values))) for name, values in components.items()}
    if len(magnitudes) > 1:
        top = max(magnitudes, key=magnitudes.__getitem__)
        others = [m for name, m in magnitudes.items() if name != top]
        if magnitudes[top] > DOMINANCE_RATIO * max(others):
            advice.append(
                f"Component `{top}` is over {DOMINANCE_RATIO:.0f}x larger than the others and "
                "drowns them out: rescale it."
            )
    fitness = [c["fitness"] for c in checkpoints]
    if len(fitness) > 2 and fitness[-1] <= fitness[0]:
        advice.append(
            "Fitness did not improve over training: the reward may pay for something other than "
            "the task."
        )
    return advice


# --- trajectory statistics -------------------------------------------------------------------


def _scalar_series(values: np.ndarray) -> np.ndarray:
    """A field's per-step values as scalars (vector fields by their norm)."""
    return np.linalg.norm(values, axis=1) if values.ndim > 1 else values


def field_stats(records: list[Record]) -> dict[str, tuple[float, float]]:
    """Mean and std of every field over all states of `records` (the reference for extremes)."""
    names = list(records[0][0].states)
    stats = {}
    for name in names:
        values = np.concatenate([_scalar_series(e.states[name]) for e, _, _ in records])
        stats[name] = (float(np.mean(values)), float(np.std(values)) or 1.0)
    return stats


def ending_stats(
    records: list[Record], reference: dict[str, tuple[float, float]], has_success: bool
) -> dict[str, Any]:
    """How the episodes ended, and which field was at an extreme when a failure ended one."""
    n = len(records)
    terminated = [e.terminated for e, _, _ in records]
    truncated = [e.truncated and not e.terminated for e, _, _ in records]
    result: dict[str, Any] = {
        "episodes": n,
        "terminated_rate": float(np.mean(terminated)),
        "truncated_rate": float(np.mean(truncated)),
        "mean_length": float(np.mean([e.length for e, _, _ in records])),
    }
    if has_success:
        result["success_rate"] = float(np.mean([bool(s) for _, _, s in records]))
        result["terminated_failed"] = sum(e.terminated and not s for e, _, s in records)
        result["terminated_succeeded"] = sum(e.terminated and bool(s) for e, _, s in records)
    # Terminations that were not successes: name the field furthest out at the last state.
    causes: Counter[tuple[str, str]] = Counter()
    finals: dict[tuple[str, str], list[float]] = {}
    for episode, _, success in records:
        if not episode.terminated or (has_success and success):
            continue
        scores = {}
        for name, (mean, std) in reference.items():
            final = float(_scalar_series(episode.states[name])[-1])
            scores[name] = ((final - mean) / std, final)
        name, (z, final) = max(scores.items(), key=lambda kv: abs(kv[1][0]))
        if abs(z) >= EXTREME_Z:
            key = (name, "high" if z > 0 else "low")
            causes[key] += 1
            finals.setdefault(key, []).append(final)
    result["causes"] = [
        {
            "field": name,
            "side": side,
            "episodes": count,
            "final_mean": float(np.mean(finals[(name, side)])),
            "typical_mean": reference[name][0],
            "typical_std": reference[name][1],
        }
        for (name, side), count in causes.most_common(3)
    ]
    return result


def field_differences(
    low: list[Record], high: list[Record], reference: list[Record], limit: int = FIELDS_REPORTED
) -> list[dict[str, Any]]:
    """The fields whose episode means differ most between `low` and `high`, in pooled stds.

    The pooled std is floored at a tenth of the statistic's spread over `reference` episodes, so
    two deterministic groups (near-zero variance) do not produce absurd effect sizes.
    """
    f_ref = episode_features(reference)
    magnitudes = [name[1:-1] for name in f_ref if name.startswith("|")]
    f_low, f_high = episode_features(low, magnitudes), episode_features(high, magnitudes)
    rows: list[dict[str, Any]] = []
    for name in f_low:
        pooled = float(np.sqrt((np.var(f_low[name]) + np.var(f_high[name])) / 2))
        floor = 0.1 * float(np.std(f_ref[name]))
        scale = max(pooled, floor, 1e-9)
        smd = (float(np.mean(f_high[name])) - float(np.mean(f_low[name]))) / scale
        rows.append(
            {
                "field": name,
                "smd": smd,
                "low_mean": float(np.mean(f_low[name])),
                "high_mean": float(np.mean(f_high[name])),
            }
        )
    rows.sort(key=lambda r: -abs(r["smd"]))
    return rows[:limit]


def compare_groups(
    own: list[Record], bank: list[Record], has_success: bool
) -> dict[str, Any] | None:
    """Pick the most telling comparison for this candidate's episodes; None when there is none.

    Failed vs successful among its own episodes; else its low- vs high-fitness episodes; else its
    episodes vs the best episodes in the bank (how this policy differs from the best seen).
    """
    reference = own + bank
    if has_success:
        won = [r for r in own if r[2]]
        lost = [r for r in own if not r[2]]
        if len(won) >= MIN_GROUP and len(lost) >= MIN_GROUP:
            return {
                "low": "failed episodes",
                "high": "successful episodes",
                "fields": field_differences(lost, won, reference),
            }
    fitness = np.array([f for _, f, _ in own])
    if len(own) >= 2 * MIN_GROUP and np.ptp(fitness) > 0.1 * max(
        float(np.std([f for _, f, _ in reference])), 1e-12
    ):
        order = np.argsort(fitness, kind="stable")
        third = max(len(own) // 3, MIN_GROUP)
        low, high = [own[i] for i in order[:third]], [own[i] for i in order[-third:]]
        return {
            "low": "its lowest-fitness episodes",
            "high": "its highest-fitness episodes",
            "fields": field_differences(low, high, reference),
        }
    if bank:
        own_mean = float(np.mean(fitness))
        spread = float(np.std([f for _, f, _ in reference]))
        best = sorted(bank, key=lambda r: -r[1])[: max(MIN_GROUP, len(bank) // 10)]
        if np.mean([f for _, f, _ in best]) > own_mean + 0.25 * spread:
            return {
                "low": "this policy's episodes",
                "high": "the best episodes in the trajectory bank",
                "fields": field_differences(own, best, reference),
            }
    return None


def component_trends(checkpoints: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """First and last checkpoint value of each component, and which way it went."""
    if len(checkpoints) < 2:
        return []
    trends = []
    for name in checkpoints[-1].get("components", {}):
        first = float(checkpoints[0].get("components", {}).get(name, 0.0))
        last = float(checkpoints[-1]["components"][name])
        values = [float(c.get("components", {}).get(name, 0.0)) for c in checkpoints]
        spread = max(values) - min(values)
        flat = spread < FLAT_RELATIVE_RANGE * max(abs(float(np.mean(values))), 1e-9)
        direction = "flat" if flat else ("rose" if last > first else "fell")
        trends.append({"component": name, "first": first, "last": last, "direction": direction})
    return trends


# --- reflection and LLM summary ----------------------------------------------------------------


def reflection(
    outcome: dict[str, Any], code: str, has_success: bool, analysis: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """The reflection text for the prompt, and the same facts as data for the run record."""
    checkpoints = outcome.get("checkpoints", [])
    if not checkpoints:
        return "", {}
    lines = []
    for name in checkpoints[-1].get("components", {}):
        lines.append(
            _series_line(
                f"component `{name}` (sum per episode)",
                [c["components"].get(name, 0.0) for c in checkpoints],
            )
        )
    fitness = [c["fitness"] for c in checkpoints]
    success = [c.get("success_rate") or 0.0 for c in checkpoints]
    if has_success and success == fitness:  # Meta-World, Fetch: one series, said once
        lines.append(_series_line("fitness (the success rate)", fitness))
    else:
        lines.append(_series_line("fitness", fitness))
        if has_success:
            lines.append(_series_line("success rate", success))
    lines.append(_series_line("episode length", [c["episode_length"] for c in checkpoints]))
    advice = advice_for(checkpoints, has_success)
    text = render(
        "reflection",
        fitness=outcome["fitness"],
        code=code,
        n_checkpoints=len(checkpoints),
        lines=lines,
        advice=advice,
        analysis=analysis or None,
    )
    return text, {"lines": lines, "advice": advice}


def _llm_summary(
    ctx: Context,
    summary: CandidateSummary,
    code: str,
    lines: list[str],
    analysis: dict[str, Any],
    worst: list[dict[str, Any]],
) -> str | None:
    """Ask the model for likely failure causes and fixes; cached so a resume never pays twice."""
    messages = [
        {
            "role": "user",
            "content": render(
                "analyzer_summary",
                goal=ctx.adapter.goal,
                fitness_description=ctx.adapter.fitness_description,
                fields=ctx.adapter.describe()["fields"],
                code=code,
                lines=lines,
                analysis=analysis,
                episodes=worst,
            ),
        }
    ]
    cand = CandidateKey.of(summary)
    key = f"r{cand.round:02d}-analyzer-{cand.label}"
    try:
        record = reply_record(ctx, key, messages, cand.round, "analyzer")
    except (LLMUnavailableError, BudgetExceededError) as exc:
        ctx.reporter.message(f"analyzer LLM summary skipped: {exc}")
        return None  # advisory: the loop goes on with the statistics alone
    return str(record.get("reply", "")).strip() or None


def _episode_brief(record: Record) -> dict[str, Any]:
    episode, fitness, success = record
    means = {
        name: float(np.mean(_scalar_series(v[1:] if len(v) > 1 else v)))
        for name, v in episode.states.items()
    }
    ended = "terminated" if episode.terminated else "time limit"
    return {
        "length": episode.length,
        "fitness": fitness,
        "success": success,
        "ended": ended,
        "means": means,
    }


# --- the node --------------------------------------------------------------------------------


def _bank_hacking(
    ctx: Context, files: CandidateFiles, bank: TrajectoryBank, gamma: float
) -> dict[str, Any] | None:
    """The bank view of the hacking flag: from the preference check's scores, or scored now."""
    from rewardsmith.eureka_loop.preference import BankView, score_candidate

    checked = files.preference()
    if checked is not None:
        return checked.get("hacking")
    if not bank.exists():
        return None
    view = BankView.load(bank, gamma)  # the check was off: score the bank now (about a second)
    scores = score_candidate(ctx, files, view)
    if not scores.ok:
        return None
    return bank_signals(
        view.fitness,
        np.asarray(scores.returns),
        np.asarray(scores.per_step),
        view.reference.per_step,
    )


def analyze_candidate(
    ctx: Context,
    c: CandidateSummary,
    bank: TrajectoryBank,
    bank_records: list[Record],
    reference: dict[str, tuple[float, float]],
    gamma: float,
    with_llm: bool,
) -> dict[str, Any]:
    """All facts about one trained candidate; writes reflection.md and analysis.json."""
    files = ctx.run.candidate(CandidateKey.of(c))
    outcome = files.outcome()
    if outcome is None:
        raise FileNotFoundError(f"{files.path} has no training outcome to analyze")
    code = files.reward_code()
    has_success = ctx.adapter.has_success
    checkpoints = outcome.get("checkpoints", [])
    analysis: dict[str, Any] = {"component_trends": component_trends(checkpoints)}
    try:  # written by the sandboxed evaluator: read as a worker file, checked
        own = read_trajectories(files.eval_dir, job_files.TRAJECTORIES_FILE)
    except WorkerFileError:
        own = []
    if own:
        analysis["endings"] = ending_stats(own, reference or field_stats(own), has_success)
        analysis["comparison"] = compare_groups(own, bank_records, has_success)
    bank_view = _bank_hacking(ctx, files, bank, gamma)
    analysis["hacking"] = combine(bank_view, training_signals(checkpoints))
    _, data = reflection(outcome, code, has_success)
    if with_llm and data:
        worst = [_episode_brief(r) for r in sorted(own, key=lambda r: r[1])[:2]]
        analysis["llm_summary"] = _llm_summary(ctx, c, code, data["lines"], analysis, worst)
    verdict = files.judge()
    if verdict is not None:
        analysis["judge"] = verdict
    text, data = reflection(outcome, code, has_success, analysis)
    files.write(layout.REFLECTION, text + judge_feedback(verdict))
    files.write(layout.ANALYSIS, {**data, **analysis})
    return analysis


def analyze(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Turn each trained candidate's checkpoints into the statistics and advice the next
    round's prompt carries, flag suspected reward hacking, and grow the bank with the
    evaluation episodes of the trained policies."""
    from rewardsmith.eureka_loop.preference import learner_gamma

    ctx = runtime.context
    trained = [c for c in state.get("candidates", []) if c.get("status") == CandidateStatus.TRAINED]
    if not trained:
        return {}
    wait_for_person(ctx, state.get("round", 0), trained, state.get("best"))  # --judge human
    judge_round(ctx, trained)  # first: its verdicts go into the reflections
    bank = bank_for(ctx.run.path)
    seed_bank(ctx.adapter, bank, ctx.config.seed, ctx.reporter.message)
    bank_records = bank.load()
    reference = field_stats(bank_records) if bank_records else {}
    gamma = learner_gamma(ctx)
    round_best = round_leader(ctx, state.get("round", 0), trained)  # as `select` will pick
    flags = {}
    for c in trained:
        with_llm = ctx.config.analyzer_llm and c is round_best
        analysis = analyze_candidate(ctx, c, bank, bank_records, reference, gamma, with_llm)
        key = CandidateKey.of(c).label
        if analysis["hacking"]["suspect"]:
            flags[key] = analysis["hacking"]["reasons"]
            ctx.reporter.message(
                f"{key}: reward_hacking_suspect: " + "; ".join(analysis["hacking"]["reasons"])
            )
    # The trained policies' evaluation episodes join the bank for the next preference checks.
    for c in trained:
        files = ctx.run.candidate(CandidateKey.of(c))
        bank.add_file(files.eval_dir / job_files.TRAJECTORIES_FILE, str(files.key))
    info = bank.info()
    ctx.run.write_round_file(
        state.get("round", 0),
        layout.round_file(layout.ROUND_ANALYSIS, state.get("attempt", 0)),
        {"reward_hacking_suspects": flags, "bank_size": info.size, "bank_version": info.version},
    )
    ctx.run.update_summary(
        reward_hacking_suspects=hacking_suspects(ctx.run.path), bank_size=info.size
    )
    return {}
