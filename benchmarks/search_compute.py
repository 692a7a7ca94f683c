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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewardsmith.eureka_loop.runner import evaluate_run, start_run  # noqa: E402
from rewardsmith.eureka_loop.state import LoopConfig  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
SCHEDULES = ("full", "halving")


def search_steps(run_dir: Path) -> int:
    """Training steps of every candidate of the search (the evaluation's are not counted)."""
    return sum(
        int(json.loads(path.read_text()).get("steps") or 0)
        for path in run_dir.glob("round_*/cand_*/outcome.json")
    )


def run_arm(
    task: str, seed: int, schedule: str, args: argparse.Namespace, runs: Path
) -> dict[str, Any]:
    config = LoopConfig(
        task_id=task,
        seed=seed,
        schedule=schedule,
        rounds=args.rounds,
        samples=args.samples,
        steps=args.steps,
        evaluate=False,
        eval_seeds=args.eval_seeds,
        sandbox="process",
    )
    start = time.monotonic()
    result = start_run(config, runs)
    search_wall = time.monotonic() - start
    run_dir = Path(result["run_dir"])
    arm: dict[str, Any] = {
        "schedule": schedule,
        "seed": seed,
        "search_steps": search_steps(run_dir),
        "search_wall_s": round(search_wall, 1),
        "best_candidate": result["best_candidate"],
        "search_best_fitness": result["best_fitness"],
    }
    if result["best_candidate"] is not None:
        report = evaluate_run(run_dir.name, runs)
        arm["evaluated_best_fitness"] = report["best"]["fitness"]
        arm["evaluated_best_std"] = report["best"]["fitness_std"]
        arm["human_fitness"] = report["human"]["fitness"]
        arm["best_is_human_reward"] = report["best_is_human_reward"]
    print(json.dumps({"task": task, **arm}), flush=True)
    return arm


def summarize(task: str, arms: list[dict[str, Any]]) -> dict[str, Any]:
    by = {s: [a for a in arms if a["schedule"] == s] for s in SCHEDULES}
    steps = {s: sum(a["search_steps"] for a in by[s]) for s in SCHEDULES}
    wall = {s: sum(a["search_wall_s"] for a in by[s]) for s in SCHEDULES}

    def mean(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else None

    best = {s: mean([a.get("evaluated_best_fitness") for a in by[s]]) for s in SCHEDULES}
    spread = {s: mean([a.get("evaluated_best_std") for a in by[s]]) for s in SCHEDULES}
    same = None
    if best["full"] is not None and best["halving"] is not None:
        noise = max(spread["full"] or 0.0, spread["halving"] or 0.0)
        same = best["halving"] >= best["full"] - noise
    return {
        "task": task,
        "steps_ratio": steps["halving"] / steps["full"] if steps["full"] else None,
        "wall_ratio": wall["halving"] / wall["full"] if wall["full"] else None,
        "steps": steps,
        "wall_s": wall,
        "evaluated_best": best,
        "evaluated_best_std": spread,
        "same_best_within_noise": same,
    }


def write_markdown(data: dict[str, Any], path: Path) -> None:
    lines = [
        "# Search compute: `--schedule halving` against `full`",
        "",
        f"Measured {data['measured']} on {data['machine']}; command: `{data['command']}`.",
        f"Budgets: {data['rounds']} rounds x {data['samples']} samples at each task's default "
        f"search steps; seeds {data['seeds']}; final evaluation {data['eval_seeds']} fresh seeds.",
        "",
        "| task | steps full | steps halving | steps ratio | wall ratio | best full | best halving "
        "| same best (within noise) |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in data["tasks"]:

        def f(x: float | None) -> str:
            return "-" if x is None else f"{x:.4g}"

        best, std = t["evaluated_best"], t["evaluated_best_std"]
        lines.append(
            f"| {t['task']} | {t['steps']['full']:,} | {t['steps']['halving']:,} "
            f"| {f(t['steps_ratio'])} | {f(t['wall_ratio'])} "
            f"| {f(best['full'])} ± {f(std['full'])} | {f(best['halving'])} ± {f(std['halving'])} "
            f"| {t['same_best_within_noise']} |"
        )
    lines += ["", "Per arm:", "", "```", *(json.dumps(a) for a in data["arms"]), "```", ""]
    path.write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", action="append", default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--steps", type=int, default=None, help="default: each task's own")
    parser.add_argument("--eval-seeds", type=int, default=2)
    args = parser.parse_args()
    tasks = args.task or ["cartpole", "pendulum"]
    arms: list[dict[str, Any]] = []
    summaries = []
    with tempfile.TemporaryDirectory(prefix="rewardsmith-search-compute-") as tmp:
        for task in tasks:
            task_arms = [
                {"task": task, **run_arm(task, seed, schedule, args, Path(tmp))}
                for seed in args.seeds
                for schedule in SCHEDULES
            ]
            arms += task_arms
            summaries.append(summarize(task, task_arms))
    data = {
        "measured": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}",
        "command": " ".join(["benchmarks/search_compute.py", *sys.argv[1:]]),
        "rounds": args.rounds,
        "samples": args.samples,
        "seeds": args.seeds,
        "eval_seeds": args.eval_seeds,
        "tasks": summaries,
        "arms": arms,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "search_compute.json").write_text(json.dumps(data, indent=2) + "\n")
    write_markdown(data, RESULTS / "search_compute.md")
    print((RESULTS / "search_compute.md").read_text())


if __name__ == "__main__":
    main()
