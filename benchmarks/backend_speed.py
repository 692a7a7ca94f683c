"""SB3 against JAX: end-to-end training throughput and time to a fixed fitness, on this machine.

For each task and backend it trains the task's human reward with the task's default budget on
that backend (the SB3 task's tuned PPO; the JAX variant's Brax PPO), in the process sandbox,
exactly as `rewardsmith train --backend B` does, and records from the progress the orchestrator
sees:

- end-to-end throughput: environment steps per wall-clock second of the whole job (tracing,
  start-up and compilation included), and the steady rate after the first checkpoint;
- time to target: wall-clock seconds from the job's start until the first checkpoint whose
  evaluation fitness reaches the target (None if none did);
- the trusted final fitness (the reward-free evaluator's).

Writes benchmarks/results/backend_speed.json and .md.
Run: `python benchmarks/backend_speed.py [--tasks cartpole halfcheetah] [--seeds 2]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from rewardsmith.envs import load_task
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.rl.jax import backends_of
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).parent / "results"
TARGETS = {"cartpole": 475.0, "halfcheetah": 100.0}  # halfcheetah: metres per episode
LIMITS = Limits(wall_s=3600, memory_mb=6144)


def one_run(task_id: str, backend: str, seed: int, steps: int | None) -> dict[str, Any]:
    """One training of the human reward, timed from the progress the orchestrator sees."""
    adapter = load_task(task_id)
    job = make_job(adapter, steps=steps, seed=seed, backend=backend)
    samples: list[tuple[float, int]] = []
    start = time.monotonic()

    def progress(done: int, total: int) -> None:
        if not samples or samples[-1][1] != done:
            samples.append((time.monotonic() - start, done))

    with tempfile.TemporaryDirectory() as tmp:
        outcome = train_reward(
            adapter,
            job,
            adapter.reward_source("human"),
            Path(tmp) / "cand",
            ProcessSandbox(),
            LIMITS,
            progress,
        )
    wall = time.monotonic() - start
    if not outcome.ok:
        return {"task": task_id, "backend": backend, "seed": seed, "error": str(outcome.error)}

    def time_at(step: int) -> float | None:
        return next((t for t, done in samples if done >= step), None)

    target = TARGETS.get(task_id)
    reached = next((c for c in outcome.checkpoints if target and c["fitness"] >= target), None)
    first = outcome.checkpoints[0]["step"] if outcome.checkpoints else None
    t_first = time_at(first) if first else None
    t_last = time_at(outcome.checkpoints[-1]["step"]) if outcome.checkpoints else None
    steady = (
        (outcome.checkpoints[-1]["step"] - first) / (t_last - t_first)
        if first and t_first is not None and t_last is not None and t_last > t_first
        else None
    )
    return {
        "task": task_id,
        "backend": backend,
        "seed": seed,
        "steps": outcome.steps,
        "wall_s": wall,
        "steps_per_s_end_to_end": outcome.steps / wall,
        "steps_per_s_after_first_checkpoint": steady,
        "seconds_to_first_checkpoint": t_first,
        "target": target,
        "step_at_target": reached["step"] if reached else None,
        "seconds_to_target": time_at(reached["step"]) if reached else None,
        "final_fitness": outcome.fitness,
        "checkpoints": [(c["step"], c["fitness"]) for c in outcome.checkpoints],
    }


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The results table as benchmarks/results/backend_speed.md shows it."""
    lines = [
        "# SB3 against JAX: training throughput and time to a fixed fitness",
        "",
        f"Machine: {meta['machine']}; {meta['cpus']} CPU cores, no GPU; measured {meta['date']}.",
        "Human reward, each backend's default budget and PPO settings, process sandbox.",
        "",
        "| task | backend | seed | steps | wall s | steps/s end to end | steps/s after 1st checkpoint "
        "| s to 1st checkpoint | target | s to target | final fitness |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    fmt = lambda v, spec: "-" if v is None else format(v, spec)  # noqa: E731
    for r in results:
        if "error" in r:
            lines.append(f"| {r['task']} | {r['backend']} | {r['seed']} | failed: {r['error']} |")
            continue
        lines.append(
            f"| {r['task']} | {r['backend']} | {r['seed']} | {r['steps']:,} | {r['wall_s']:.0f} "
            f"| {r['steps_per_s_end_to_end']:,.0f} | {fmt(r['steps_per_s_after_first_checkpoint'], ',.0f')} "
            f"| {fmt(r['seconds_to_first_checkpoint'], '.0f')} | {r['target']:g} "
            f"| {fmt(r['seconds_to_target'], '.0f')} | {fmt(r['final_fitness'], '.4g')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Both backends on every task; rows of tasks not run this time are kept from the last run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "halfcheetah"])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="override both budgets")
    args = parser.parse_args()
    results = []
    for task_id in args.tasks:
        for backend in ("sb3", "jax"):
            if backend not in backends_of(task_id):
                results.append(
                    {"task": task_id, "backend": backend, "seed": 0, "error": "no such variant"}
                )
                continue
            for seed in range(args.seeds):
                result = one_run(task_id, backend, seed, args.steps)
                print(json.dumps(result), flush=True)
                results.append(result)
    meta = {
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
        "load_average": os.getloadavg(),
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "backend_speed.json"
    if path.exists():  # keep the other tasks' rows from an earlier run
        kept = [r for r in json.loads(path.read_text())["results"] if r["task"] not in args.tasks]
        results = kept + results
    (RESULTS / "backend_speed.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n"
    )
    (RESULTS / "backend_speed.md").write_text(markdown(results, meta))


if __name__ == "__main__":
    main()
