"""Search compute: the `halving` schedule against `full`, same designer, seeds and budgets.

For each task and seed, the offline designer's run at the task's default search budget is made
twice, with `--schedule full` (every candidate trains the whole budget) and `--schedule halving`
(rungs of 1/4, 1/2 and all of it; the fitter half continues from its saved state). Round 0 gets
the same candidates in both arms (the offline designer is seeded); later rounds may differ, since
each arm's feedback comes from its own training. Reported per arm:

- search training steps (every candidate's steps, from its outcome; rejected ones train none)
  and wall time of the search alone;
- the best reward's fitness in the final evaluation (`rewardsmith evaluate`: fresh seeds, full
  budget, the same for both arms), with its spread over the seeds.

Target (issue 15): the same best fitness at <= 0.5x the steps of `full`. Run:

    .venv/bin/python benchmarks/search_compute.py --task cartpole --task pendulum --seeds 0 1

A task whose default budget does not fit a sitting can run at `--steps N` (its row says so);
seeds add to a task's earlier ones at the same budget, and the files are rewritten after each
seed's pair of arms, so a stop loses none. `--keep-runs DIR` keeps the run folders (to read
which candidates each arm trained and why one won).

Writes benchmarks/results/search_compute.json and .md (see docs/benchmarks.md). The wall ratio is
measured in the same process, arms alternating, on a shared machine: steps are exact, time is not.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewardsmith.choices import SandboxChoice, Schedule  # noqa: E402
from rewardsmith.envs import load_task  # noqa: E402
from rewardsmith.eureka_loop.runner import evaluate_run, start_run  # noqa: E402
from rewardsmith.eureka_loop.state import LoopConfig  # noqa: E402
from rewardsmith.jobs.training import make_job  # noqa: E402
from rewardsmith.runs.versus_human import versus_human  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SCHEDULES = ("full", "halving")


def search_steps(run_dir: Path) -> int:
    """Training steps of every candidate of the search (the evaluation's are not counted)."""
    return sum(
        int(json.loads(path.read_text()).get("steps") or 0)
        for path in run_dir.glob("round_*/cand_*/outcome.json")
    )


def steps_per_candidate(task: str, steps: int | None) -> int:
    """The budget a candidate of `task` trains for at full fidelity (`steps`, or the task's own)."""
    return make_job(load_task(task), steps=steps, seed=0, search=True).steps


def run_arm(
    task: str, seed: int, schedule: str, args: argparse.Namespace, runs: Path
) -> dict[str, Any]:
    """One search under `schedule`, timed alone, then its best reward's final evaluation."""
    config = LoopConfig(
        task_id=task,
        seed=seed,
        schedule=Schedule(schedule),
        rounds=args.rounds,
        samples=args.samples,
        steps=args.steps,
        evaluate=False,
        eval_seeds=args.eval_seeds,
        sandbox=SandboxChoice.PROCESS,
    )
    start = time.monotonic()
    result = start_run(config, runs)
    search_wall = time.monotonic() - start
    run_dir = Path(result["run_dir"])
    arm: dict[str, Any] = {
        "schedule": schedule,
        "seed": seed,
        "steps_per_candidate": steps_per_candidate(task, args.steps),
        "measured_at": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
        "search_steps": search_steps(run_dir),
        "search_wall_s": round(search_wall, 1),
        "best_candidate": result["best_candidate"],
        "search_best_fitness": result["best_fitness"],
    }
    if result["best_candidate"] is not None:
        report = evaluate_run(run_dir.name, runs)
        arm["evaluated_best_fitness"] = report["best"]["fitness"]
        arm["evaluated_best_std"] = report["best"]["fitness_std"]
        arm["evaluated_best_per_seed"] = report["best"]["per_seed"]
        arm["human_fitness"] = report["human"]["fitness"]
        arm["best_is_human_reward"] = report["best_is_human_reward"]
    print(json.dumps({"task": task, **arm}), flush=True)
    return arm


def summarize(task: str, arms: list[dict[str, Any]]) -> dict[str, Any]:
    """A task's steps and wall ratios, and on how many run seeds halving found as good a best."""
    by = {
        s: sorted((a for a in arms if a["schedule"] == s), key=lambda a: a["seed"])
        for s in SCHEDULES
    }
    steps = {s: sum(a["search_steps"] for a in by[s]) for s in SCHEDULES}
    wall = {s: sum(a["search_wall_s"] for a in by[s]) for s in SCHEDULES}

    # Every evaluation seed of every run seed, pooled per arm, for the table's mean and spread.
    pooled = {
        s: [f for a in by[s] for f in a.get("evaluated_best_per_seed", [])] for s in SCHEDULES
    }
    best = {s: float(np.mean(pooled[s])) if pooled[s] else None for s in SCHEDULES}
    spread = {s: float(np.std(pooled[s])) if pooled[s] else None for s in SCHEDULES}
    # Per run seed: halving found as good a best if its evaluated best is no lower than full's
    # by more than full's own spread over the evaluation seeds plus 1% of it.
    matched = 0
    pairs = list(zip(by["full"], by["halving"], strict=True))
    for full, halving in pairs:
        f, h = full.get("evaluated_best_fitness"), halving.get("evaluated_best_fitness")
        if f is not None and h is not None:
            matched += h >= f - (full.get("evaluated_best_std") or 0.0) - 0.01 * abs(f)
    return {
        "task": task,
        "seeds": [a["seed"] for a in by["full"]],
        "steps_per_candidate": arms[0].get("steps_per_candidate"),
        "steps_ratio": steps["halving"] / steps["full"] if steps["full"] else None,
        "wall_ratio": wall["halving"] / wall["full"] if wall["full"] else None,
        "steps": steps,
        "wall_s": wall,
        "evaluated_best": best,
        "evaluated_best_std": spread,
        "evaluated_best_per_seed": pooled,
        "same_best_on_seeds": f"{matched} of {len(pairs)}",
        # Pooled over every seed, by the rule the quality table uses for best against human.
        "halving_vs_full": versus_human(pooled["halving"], pooled["full"]),
    }


def pooled_comparison(comparison: dict[str, Any] | None) -> str:
    """halving's pooled best minus full's, against twice its standard error, in words."""
    if comparison is None:
        return "-"
    return f"{comparison['difference']:+.3g} (2 SE {comparison['two_se']:.2g}): {comparison['verdict']}"


def write_markdown(data: dict[str, Any], path: Path) -> None:
    """The table, how each task was measured, and every arm's raw row."""
    lines = [
        "# Search compute: `--schedule halving` against `full`",
        "",
        "Each task's run: the offline designer, both arms with the same seeds and budget per",
        "candidate (the task's default unless the row says otherwise); best = the best reward's",
        "fitness in the final evaluation (fresh seeds, that budget), with its spread over those",
        "seeds. \"As good a best\" per run seed: halving's best no lower than full's by more",
        "than full's spread plus 1%; pooled: halving's best minus full's over every evaluation",
        'seed, against twice its standard error ("as good" within it, "worse" below it).',
        "",
        "| task | budget per candidate | steps full | steps halving | steps ratio | wall ratio "
        "| best full | best halving | as good a best, run seeds | halving - full, pooled |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for t in data["tasks"]:

        def f(x: float | None) -> str:
            return "-" if x is None else f"{x:.4g}"

        best, std = t["evaluated_best"], t["evaluated_best_std"]
        budget = f"{t['steps_per_candidate']:,}"
        if t["steps_per_candidate"] != steps_per_candidate(t["task"], None):
            budget += f" (reduced, default {steps_per_candidate(t['task'], None):,})"
        lines.append(
            f"| {t['task']} | {budget} | {t['steps']['full']:,} | {t['steps']['halving']:,} "
            f"| {f(t['steps_ratio'])} | {f(t['wall_ratio'])} "
            f"| {f(best['full'])} ± {f(std['full'])} | {f(best['halving'])} ± {f(std['halving'])} "
            f"| {t['same_best_on_seeds']} | {pooled_comparison(t.get('halving_vs_full'))} |"
        )
    lines += ["", "How each was measured:", ""]
    for t in data["tasks"]:
        for m in t["measurements"]:
            lines.append(
                f"- {t['task']}, seeds {m['seeds']}: {m['measured']} on {m['machine']}; "
                f"`{m['command']}`; {m['rounds']} rounds x {m['samples']} samples, "
                f"evaluation {m['eval_seeds']} fresh seeds."
            )
    lines += ["", "Per arm:", "", "```", *(json.dumps(a) for a in data["arms"]), "```", ""]
    path.write_text("\n".join(lines))


def load_results(path: Path) -> dict[str, Any]:
    """The stored tasks and arms; files from before seeds could be added are brought up to date
    (their one measurement becomes a list, their arms get the task's default budget)."""
    if not path.exists():
        return {"tasks": [], "arms": []}
    data = json.loads(path.read_text())
    for task in data["tasks"]:
        if "measurements" not in task:
            keys = ("measured", "machine", "command", "rounds", "samples", "seeds", "eval_seeds")
            task["measurements"] = [{k: task.pop(k) for k in keys}]
    for arm in data["arms"]:
        arm.setdefault("steps_per_candidate", steps_per_candidate(arm["task"], None))
    return data


def merge(
    data: dict[str, Any], task: str, arms: list[dict[str, Any]], measurement: dict[str, Any]
) -> dict[str, Any]:
    """`arms` in place of the task's earlier arms for the same seeds; its other seeds are kept
    if they were measured at the same budget per candidate (numbers at others do not pool)."""
    seeds = {a["seed"] for a in arms}
    earlier = [a for a in data["arms"] if a["task"] == task]
    budgets = {a["steps_per_candidate"] for a in earlier + arms}
    if len(budgets) > 1:
        raise SystemExit(
            f"{task} has search-compute rows at {sorted(budgets)} steps per candidate; measure "
            "at the earlier budget (--steps), or drop the task's rows from "
            f"{RESULTS / 'search_compute.json'} to start again at this one"
        )
    kept = [a for a in earlier if a["seed"] not in seeds]
    task_arms = sorted(kept + arms, key=lambda a: (a["seed"], SCHEDULES.index(a["schedule"])))
    old: dict[str, Any] = next(
        (t for t in data["tasks"] if t["task"] == task), {"measurements": []}
    )
    measurements = [m for m in old["measurements"] if set(m["seeds"]) - seeds]
    summary = {**summarize(task, task_arms), "measurements": [*measurements, measurement]}
    return {
        "tasks": [t for t in data["tasks"] if t["task"] != task] + [summary],
        "arms": [a for a in data["arms"] if a["task"] != task] + task_arms,
    }


def rebuild_table() -> None:
    """Summaries and markdown again from the stored arms (e.g. after a change of the summary)."""
    path = RESULTS / "search_compute.json"
    data = load_results(path)
    for i, old in enumerate(data["tasks"]):
        arms = [a for a in data["arms"] if a["task"] == old["task"]]
        data["tasks"][i] = {**summarize(old["task"], arms), "measurements": old["measurements"]}
    save(data, path)


def save(data: dict[str, Any], path: Path) -> None:
    """The JSON and its markdown summary, written together."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    write_markdown(data, RESULTS / "search_compute.md")


def main() -> None:
    """Both schedules per (task, seed), alternating; the files are rewritten after each seed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", action="append", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--steps", type=int, default=None, help="default: each task's own")
    parser.add_argument("--eval-seeds", type=int, default=2)
    parser.add_argument(
        "--keep-runs", type=Path, help="keep the run folders here (default: deleted afterwards)"
    )
    parser.add_argument(
        "--table", action="store_true", help="only rebuild the summaries and the table"
    )
    args = parser.parse_args()
    path = RESULTS / "search_compute.json"
    if args.table:
        rebuild_table()
        print((RESULTS / "search_compute.md").read_text())
        return
    data = load_results(path)
    temporary = tempfile.TemporaryDirectory(prefix="rewardsmith-search-compute-")
    with nullcontext(str(args.keep_runs)) if args.keep_runs else temporary as tmp:
        for task in args.task or ["cartpole", "pendulum"]:
            arms: list[dict[str, Any]] = []
            for seed in args.seeds:
                arms += [
                    {"task": task, **run_arm(task, seed, schedule, args, Path(tmp))}
                    for schedule in SCHEDULES
                ]
                measurement = {
                    "measured": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                    f"load {os.getloadavg()[0]:.1f}",
                    "command": " ".join(["benchmarks/search_compute.py", *sys.argv[1:]]),
                    "rounds": args.rounds,
                    "samples": args.samples,
                    "seeds": sorted({a["seed"] for a in arms}),
                    "eval_seeds": args.eval_seeds,
                }
                data = merge(data, task, arms, measurement)
                save(data, path)  # after every seed's pair of arms: a stop loses none
    print((RESULTS / "search_compute.md").read_text())


if __name__ == "__main__":
    main()
