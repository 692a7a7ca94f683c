"""Common random numbers: is a comparison of two rewards less noisy when both train on one seed?

The search ranks candidates by one training each, and each candidate trains on a seed of its own
(`eureka_loop.trainer.search_seed`), so a lucky policy initialisation or episode sequence counts
as a better reward. Simulation optimisation compares alternatives on common random numbers
instead: the same seeds for both, so what the seed does to each cancels in the difference where
the two trainings stay alike. This measures whether that holds for RL training, where two
trainings diverge as soon as their policies act differently.

For one task, the human reward (A) and its round-0 variant with one component at a tenth (B, as
the offline designer writes it) train on seeds 0..N-1, and B again on seeds N..2N-1, at the
search's budget in the process sandbox, two at a time. The difference B - A is taken on the same
seed (paired) and on different seeds (independent). Reported: the spread of each difference, the
correlation of A's and B's fitness over the shared seeds, and how often each ranks B above A.
Writes benchmarks/results/common_seeds.{json,md}; results of other tasks are kept.

    .venv/bin/python benchmarks/common_seeds.py --task pendulum --component velocity --seeds 8
    .venv/bin/python benchmarks/common_seeds.py --task pendulum --steps 8192   # halving's rung 0
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.offline import ABLATION_WEIGHT, Genome, render_code
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).parent / "results"


def train_fitness(
    task: str, steps: int | None, source: str, seed: int, folder: Path
) -> float | None:
    """The reward-free evaluator's fitness of one training (default: the search's budget)."""
    adapter = load_task(task)
    job = make_job(adapter, steps=steps, seed=seed, search=True)
    outcome = train_reward(adapter, job, source, folder, ProcessSandbox(), Limits(wall_s=3600))
    return outcome.fitness if outcome.ok else None


def summarize(a: dict[int, float], b: dict[int, float], n: int) -> dict[str, Any]:
    """Paired and independent differences B - A, their spread, and how often B ranks above A."""
    paired = [b[s] - a[s] for s in range(n)]
    independent = [b[n + s] - a[s] for s in range(n)]
    return {
        "a_mean": statistics.mean(a.values()),
        "a_sd": statistics.stdev(a.values()),
        "b_mean": statistics.mean(b.values()),
        "b_sd": statistics.stdev(b.values()),
        "correlation_same_seed": statistics.correlation(
            [a[s] for s in range(n)], [b[s] for s in range(n)]
        ),
        "paired_diff_mean": statistics.mean(paired),
        "paired_diff_sd": statistics.stdev(paired),
        "independent_diff_mean": statistics.mean(independent),
        "independent_diff_sd": statistics.stdev(independent),
        "paired_b_above_a": sum(d > 0 for d in paired) / n,
        "independent_b_above_a": sum(d > 0 for d in independent) / n,
    }


def markdown(results: dict[str, Any]) -> str:
    """Every task's measurement as a table."""
    lines = [
        "# Common random numbers: B - A on the same seed against different seeds",
        "",
        "A = the human reward, B = it with one component at a tenth; fitness from the "
        "reward-free evaluator.",
        "",
        "| task | B | steps | seeds | A mean ± sd | B mean ± sd | corr(A, B), same seed | B - A paired: "
        "mean ± sd | B - A independent: mean ± sd | sd ratio | B above A, paired | "
        "B above A, independent | measured |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for task, r in sorted(results.items()):
        s = r["summary"]
        ratio = s["paired_diff_sd"] / s["independent_diff_sd"] if s["independent_diff_sd"] else None
        lines.append(
            f"| {task.split('@')[0]} | {r['component']} x{ABLATION_WEIGHT} | {r['steps']:,} "
            f"| {r['seeds']} "
            f"| {s['a_mean']:.4g} ± {s['a_sd']:.2g} | {s['b_mean']:.4g} ± {s['b_sd']:.2g} "
            f"| {s['correlation_same_seed']:.2f} "
            f"| {s['paired_diff_mean']:+.3g} ± {s['paired_diff_sd']:.2g} "
            f"| {s['independent_diff_mean']:+.3g} ± {s['independent_diff_sd']:.2g} "
            f"| {'-' if ratio is None else f'{ratio:.2f}'} "
            f"| {s['paired_b_above_a']:.0%} | {s['independent_b_above_a']:.0%} "
            f"| {r['measured_at']}, {r['wall_s'] / 60:.0f} min |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Train A on N seeds and B on 2N, two at a time; record and tabulate."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="pendulum")
    parser.add_argument("--component", default="velocity", help="the human component B scales")
    parser.add_argument("--seeds", type=int, default=8, help="N: A trains on N seeds, B on 2N")
    parser.add_argument("--steps", type=int, help="per training (default: the search's budget)")
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    if args.seeds < 3:
        parser.error("--seeds must be at least 3 (a spread needs them)")
    adapter = load_task(args.task)
    human = adapter.reward_source("human")
    if human is None:
        parser.error(f"{args.task} has no human reward to vary")
    variant = render_code(Genome(human_weights={args.component: ABLATION_WEIGHT}), human, {})
    jobs = [("a", human, s) for s in range(args.seeds)]
    jobs += [("b", variant, s) for s in range(2 * args.seeds)]
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.parallel) as pool:
        fits = list(
            pool.map(
                lambda j: train_fitness(
                    args.task, args.steps, j[1], j[2], Path(tmp, f"{j[0]}{j[2]}")
                ),
                jobs,
            )
        )
    wall = time.monotonic() - start
    failed = [(arm, seed) for (arm, _, seed), f in zip(jobs, fits, strict=True) if f is None]
    if failed:
        raise SystemExit(f"trainings failed: {failed}")
    by_arm: dict[str, dict[int, float]] = {"a": {}, "b": {}}
    for (arm, _, seed), fitness in zip(jobs, fits, strict=True):
        by_arm[arm][seed] = float(fitness or 0.0)
    a, b = by_arm["a"], by_arm["b"]
    path = RESULTS / "common_seeds.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    steps = make_job(adapter, steps=args.steps, seed=0, search=True).steps
    results[args.task if args.steps is None else f"{args.task}@{steps}"] = {
        "component": args.component,
        "seeds": args.seeds,
        "steps": steps,
        "a": a,
        "b": b,
        "summary": summarize(a, b, args.seeds),
        "wall_s": wall,
        "measured_at": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
    }
    path.write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "common_seeds.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
