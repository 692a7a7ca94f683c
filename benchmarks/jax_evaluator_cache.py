"""What the evaluator's compilation cache saves on the JAX backend (`jobs/compile_store.py`).

For each task: one JAX training on the human reward (a small budget: the evaluator's cost does
not depend on it), then its reward-free evaluation again and again in the process sandbox,
alternating a cold evaluator (an empty store: it compiles, as every candidate's evaluator did
before the cache) and a warm one (the store the first cold one filled: what every evaluator after
a task's first now gets). Cold and warm alternate so that load from other jobs falls on both;
the comparison is their ratio. Each evaluation must report the same fitness. Writes
benchmarks/results/jax_evaluator_cache.{json,md}; results of other tasks are kept.

    .venv/bin/python benchmarks/jax_evaluator_cache.py --task cartpole --task halfcheetah --repeats 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rewardsmith.envs import load_task
from rewardsmith.jobs import compile_store
from rewardsmith.jobs.training import evaluate_policy, make_job, train_reward
from rewardsmith.jobs.training_jax import EVALUATOR_MODULE
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).parent / "results"


def timed_evaluation(task: str, candidate: Path, store: Path) -> tuple[float, float | None, int]:
    """One sandboxed evaluation with `store`: wall seconds, fitness, entries it added."""
    adapter = load_task(task)
    job = make_job(adapter, steps=2048, seed=0, backend="jax")
    start = time.monotonic()
    error, record = evaluate_policy(
        adapter, job, candidate, ProcessSandbox(), Limits(wall_s=3600), EVALUATOR_MODULE, [store]
    )
    wall = time.monotonic() - start
    added = compile_store.harvest(candidate / "eval", store)
    if error is not None:
        raise SystemExit(f"{task}: evaluation failed: {error}")
    return wall, record.get("fitness"), added


def measure(task: str, repeats: int, folder: Path) -> dict[str, Any]:
    """Train once (no cache), then alternate cold and warm evaluations of that policy."""
    adapter = load_task(task)
    os.environ[compile_store.CACHE_ENV] = "off"
    job = make_job(adapter, steps=2048, seed=0, backend="jax")
    candidate = folder / task
    outcome = train_reward(
        adapter, job, adapter.reward_source("human"), candidate, ProcessSandbox(), Limits()
    )
    if not outcome.ok:
        raise SystemExit(f"{task}: training failed: {outcome.error}")
    warm_store = folder / "warm"
    cold, warm, fitnesses, entries = [], [], set(), 0
    for repeat in range(repeats):
        cold_store = folder / f"cold{repeat}"
        cold_store.mkdir()
        wall, fitness, added = timed_evaluation(task, candidate, cold_store)
        cold.append(wall)
        fitnesses.add(fitness)
        if repeat == 0:
            shutil.copytree(cold_store, warm_store)
            entries = added
        wall, fitness, added = timed_evaluation(task, candidate, warm_store)
        warm.append(wall)
        fitnesses.add(fitness)
        if added:
            raise SystemExit(f"{task}: a warm evaluator compiled {added} new program(s)")
    store_bytes = sum(p.stat().st_size for p in warm_store.iterdir())
    return {
        "task": task,
        "repeats": repeats,
        "cold_s": cold,
        "warm_s": warm,
        "cold_median_s": statistics.median(cold),
        "warm_median_s": statistics.median(warm),
        "ratio": statistics.median(warm) / statistics.median(cold),
        "fitness_identical": len(fitnesses) == 1,
        "entries": entries,
        "store_mb": store_bytes / 2**20,
        "training_wall_s": outcome.wall_s,
        "measured": dt.datetime.now().isoformat(timespec="minutes"),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }


def write(results: dict[str, Any]) -> None:
    """JSON (kept across invocations, task by task) and the Markdown table."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "jax_evaluator_cache.json"
    merged = json.loads(path.read_text()) if path.exists() else {}
    merged.update(results)
    path.write_text(json.dumps(merged, indent=2) + "\n")
    lines = [
        "| task | cold evaluator (median) | warm evaluator (median) | warm / cold | "
        "store | same fitness | training (2,048 steps) |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for row in merged.values():
        lines.append(
            f"| {row['task']} | {row['cold_median_s']:.1f} s | {row['warm_median_s']:.1f} s | "
            f"{row['ratio']:.2f} | {row['entries']} entries, {row['store_mb']:.1f} MB | "
            f"{'yes' if row['fitness_identical'] else 'NO'} | {row['training_wall_s']:.0f} s |"
        )
    (RESULTS / "jax_evaluator_cache.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    """Measure each task named, then rewrite the results table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results = {}
    for task in args.task:
        with tempfile.TemporaryDirectory(prefix="rewardsmith-evalcache-") as tmp:
            results[task] = measure(task, args.repeats, Path(tmp))
    write(results)


if __name__ == "__main__":
    main()
