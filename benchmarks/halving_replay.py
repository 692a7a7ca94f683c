"""Halving replayed on full trainings: what its rungs would have cut, and what that would cost.

`benchmarks/search_compute.py` compares the two schedules end to end, but its arms drift apart
after round 0 (each breeds from its own best), so a miss there mixes two causes: a rung that cut
the eventual winner, and a search that then bred from other parents. This replay isolates the
first. It reads runs made with `--schedule full` and, round by round, applies the halving rule
(`eureka_loop/halving.py`: the same rung budgets and survivor counts) to each candidate's
learning curve, its reflection checkpoints, every tenth of the budget. A rung's fitness is the
last checkpoint at or before the rung's steps (a continued learner trains as the full one did up
to there); the round's pick is the survivor of the last rung with the best final fitness.

Reported per task: rounds where the first rung kept the round's eventual best; the round's pick
against its best (regret, % of the best's fitness); and per run, the best the replayed search
would have found against the full search's best. Caveats: the checkpoints score the policy on
`eval_episodes` episodes of the reflection callback, not the reward-free evaluator's 2x as many
that rank the rungs in a real run; and a real halving run would have bred its later rounds from
its own picks.

    .venv/bin/rewardsmith run pendulum --seed 4 --no-evaluate --runs-dir /tmp/replay_runs
    .venv/bin/python benchmarks/halving_replay.py /tmp/replay_runs

Writes benchmarks/results/halving_replay.{json,md}.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewardsmith.eureka_loop.halving import rungs, survivors  # noqa: E402
from rewardsmith.runs.store import RunStore  # noqa: E402
from rewardsmith.runs.views import load_view  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CLOSE = 0.01
"""A pick within 1% of the round's best counts as as good (CartPole's 498.9 against 500)."""


@dataclass(frozen=True)
class Curve:
    """One candidate's full training: its name, final fitness and (step, fitness) checkpoints."""

    name: str
    final: float
    checkpoints: tuple[tuple[int, float], ...]

    def half_way(self, full_steps: int) -> float:
        """The fraction of the budget at which it first got half of the way from its first
        checkpoint's fitness to its final one: where learning took off."""
        start = self.checkpoints[0][1]
        for step, fitness in self.checkpoints:
            if (fitness - start) >= 0.5 * (self.final - start):
                return step / full_steps
        return 1.0

    def at(self, steps: int) -> float:
        """The fitness a rung ending at `steps` would have ranked it by."""
        before = [fitness for step, fitness in self.checkpoints if step <= steps]
        return before[-1] if before else float("-inf")


RULES: dict[str, tuple[float, ...] | None] = {
    "1/4, 1/2, 1 (halving.py)": None,
    "1/2, 1": (0.5, 1.0),
}
"""The rung budgets replayed, as fractions of the full budget (None: the product's own rule);
each rung keeps the fitter half (`halving.survivors`)."""


@dataclass(frozen=True)
class RoundReplay:
    """What halving would have done with one round's candidates."""

    best: Curve
    first_rung_kept: list[Curve]
    pick: Curve
    steps_fraction: float  # its training steps against every candidate's full budget

    @property
    def kept_best(self) -> bool:
        """Whether the first rung kept the round's eventual best (or one within 1% of it)."""
        return any(close(c.final, self.best.final) for c in self.first_rung_kept)

    @property
    def regret(self) -> float:
        """How far the pick's final fitness falls short of the best's, as a fraction of it."""
        return shortfall(self.pick.final, self.best.final)


def shortfall(fitness: float, best: float) -> float:
    """How far `fitness` falls short of `best`, as a fraction of it."""
    return (best - fitness) / max(abs(best), 1e-12)


def close(fitness: float, best: float) -> bool:
    """Within `CLOSE` of the best."""
    return shortfall(fitness, best) <= CLOSE


def rung_steps(full_steps: int, candidates: int, fractions: tuple[float, ...] | None) -> list[int]:
    """Where each rung ends, in steps."""
    if fractions is None:
        return [rung.steps for rung in rungs(full_steps, candidates)]
    return [int(fraction * full_steps) for fraction in fractions]


def replay_round(
    curves: list[Curve], full_steps: int, fractions: tuple[float, ...] | None = None
) -> RoundReplay:
    """Halving's rungs over one round's full trainings, as `eureka_loop/trainer.py` runs them:
    each rung but the last keeps the fitter half by the fitness at its end."""
    entered = list(curves)
    kept: list[Curve] = []
    trained = done = 0
    ends = rung_steps(full_steps, len(curves), fractions)
    for i, end in enumerate(ends):
        trained += len(entered) * (end - done)
        done = end
        if i == len(ends) - 1:
            break
        entered = sorted(entered, key=lambda c: c.at(end), reverse=True)
        entered = entered[: survivors(len(entered))]
        kept = kept or entered
    pick = max(entered, key=lambda c: c.final)
    best = max(curves, key=lambda c: c.final)
    return RoundReplay(best, kept, pick, trained / (len(curves) * full_steps))


def run_rounds(run_dir: Path) -> tuple[str, list[list[Curve]], int] | None:
    """A full-schedule run's task, its rounds' trained curves, and its steps per candidate;
    None for a run that trained in rungs (its curves stop where halving stopped them)."""
    run = RunStore(run_dir.parent).open_run(run_dir)
    view = load_view(run)
    rounds: dict[tuple[int, int], list[Curve]] = {}
    steps = 0
    for candidate in view.candidates:
        outcome = candidate.outcome() if candidate.status == "trained" else None
        if not outcome or outcome.get("fitness") is None:
            continue
        if outcome.get("rung") is not None:
            return None
        steps = max(steps, int(outcome["steps"]))
        points = tuple((int(c["step"]), float(c["fitness"])) for c in outcome["checkpoints"])
        curve = Curve(candidate.key, float(outcome["fitness"]), points)
        rounds.setdefault((candidate.round, candidate.attempt), []).append(curve)
    return view.task, [rounds[key] for key in sorted(rounds)], steps


def summarize(runs: list[Path]) -> dict[str, dict[str, Any]]:
    """Per rule and task: how the first rung and the whole schedule would have chosen."""
    found: list[tuple[Path, str, list[list[Curve]], int]] = []
    for run_dir in runs:
        read = run_rounds(run_dir)
        if read is None:
            print(f"skipped {run_dir.name}: a halving run", file=sys.stderr)
            continue
        task, rounds, steps = read
        found.append((run_dir, task, rounds, steps))
    results: dict[str, dict[str, Any]] = {}
    for rule, fractions in RULES.items():
        tasks: dict[str, Any] = {}
        for run_dir, task, rounds, steps in found:
            trained = [r for r in rounds if len(r) > 1]
            replays = [replay_round(r, steps, fractions) for r in trained]
            if not replays:
                continue
            e = tasks.setdefault(task, {"runs": [], "replays": [], "half_way": []})
            e["replays"] += replays
            e["half_way"] += [c.half_way(steps) for r in trained for c in r]
            full_best = max(c.final for r in rounds for c in r)
            picked = max(r.pick.final for r in replays)
            e["runs"].append(
                {
                    "run": run_dir.name,
                    "steps_per_candidate": steps,
                    "full_best": full_best,
                    "replayed_best": picked,
                }
            )
        for e in tasks.values():
            replays = e.pop("replays")
            regrets = [r.regret for r in replays]
            e["rounds"] = len(replays)
            e["median_half_way"] = statistics.median(e.pop("half_way"))
            e["steps_fraction"] = statistics.mean(r.steps_fraction for r in replays)
            e["kept_best"] = sum(r.kept_best for r in replays)
            e["close_rounds"] = sum(close(r.pick.final, r.best.final) for r in replays)
            e["median_regret"] = statistics.median(regrets)
            e["worst_regret"] = max(regrets)
            e["close_runs"] = sum(close(r["replayed_best"], r["full_best"]) for r in e["runs"])
            e["worst_run_regret"] = max(
                shortfall(r["replayed_best"], r["full_best"]) for r in e["runs"]
            )
        results[rule] = tasks
    return results


def table(results: dict[str, dict[str, Any]]) -> str:
    """The markdown table of `summarize`'s result."""
    lines = [
        "| task | half-way point | rungs (of the budget) | runs | steps "
        "| first rung kept the round's best "
        "| round's pick within 1% | median regret a round | worst round | run's best within 1% "
        "| worst run |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows = sorted((task, rule, e) for rule, tasks in results.items() for task, e in tasks.items())
    for task, rule, e in rows:
        rounds, runs = e["rounds"], len(e["runs"])
        lines.append(
            f"| {task} | {e['median_half_way']:.2f} | {rule} | {runs} | {e['steps_fraction']:.2f}x "
            f"| {e['kept_best']} of {rounds} | {e['close_rounds']} of {rounds} "
            f"| {100 * e['median_regret']:.1f}% | {100 * e['worst_regret']:.1f}% "
            f"| {e['close_runs']} of {runs} | {100 * e['worst_run_regret']:.1f}% |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Replay every full-schedule run under the given folders; write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs_dirs", nargs="+", type=Path, help="folders of full-schedule runs")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    runs = sorted(p.parent for d in args.runs_dirs for p in d.glob("*/run.json"))
    results = summarize(runs)
    if not any(results.values()):
        raise SystemExit(
            f"no finished full-schedule run with trained rounds under {args.runs_dirs}"
        )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M+00:00")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "halving_replay.json").write_text(
        json.dumps({"measured_at": stamp, "rules": results}, indent=2) + "\n"
    )
    text = f"# Halving replayed on full trainings ({stamp})\n\n{table(results)}"
    (args.out / "halving_replay.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
