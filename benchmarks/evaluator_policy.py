"""What computing the policy in numpy saves each evaluation: the whole sandboxed evaluator, numpy
actor against the rebuilt learner, on the same trained policy.

The evaluator (and the video program) used to import torch and Stable-Baselines3 and rebuild the
learner just to ask it for deterministic actions; now they compute the exported layers
(`actor.npz`) in numpy and fall back to the learner only without them. For each task this trains
one policy (the human reward, a small budget) in the process sandbox, then runs the real
evaluator on it `--reps` times each way, alternated, the learner forced by moving `actor.npz`
aside. Fitnesses are reported too: both ways must score the policy alike. Run:

    .venv/bin/python benchmarks/evaluator_policy.py --reps 5

Writes benchmarks/results/evaluator_policy.json and .md (see docs/benchmarks.md). Compare the
two as a ratio within one run: the machines are shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.jobs.training import evaluate_policy, make_job, train_reward
from rewardsmith.runs import layout
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).resolve().parent / "results"
TASKS = {"cartpole": 4096, "pendulum": 4096, "halfcheetah": 2048}  # task: training steps


def evaluate_once(
    task_id: str, job: Any, candidate: Path, sandbox: ProcessSandbox
) -> tuple[float, float]:
    """Seconds of one sandboxed evaluation, and the fitness it measured."""
    start = time.monotonic()
    error, record = evaluate_policy(load_task(task_id), job, candidate, sandbox, Limits())
    if error is not None:
        raise RuntimeError(f"{task_id}: {error}")
    return time.monotonic() - start, record["fitness"]


def measure(task_id: str, steps: int, reps: int, scratch: Path) -> dict[str, Any]:
    """Train once, then time the evaluator both ways, alternated."""
    sandbox = ProcessSandbox()
    adapter = load_task(task_id)
    job = make_job(adapter, steps=steps, seed=0)
    candidate = scratch / task_id
    outcome = train_reward(adapter, job, adapter.reward_source("human"), candidate, sandbox)
    if not outcome.ok:
        raise RuntimeError(f"{task_id}: {outcome.error}")
    actor, aside = candidate / layout.JOB_DIR / files.ACTOR_FILE, candidate / "actor.aside"
    times: dict[str, list[float]] = {"numpy": [], "learner": []}
    fitness: dict[str, float] = {}
    for _ in range(reps):
        for way in ("numpy", "learner"):
            if way == "learner":
                actor.rename(aside)
            seconds, fitness[way] = evaluate_once(task_id, job, candidate, sandbox)
            times[way].append(seconds)
            if way == "learner":
                aside.rename(actor)
    numpy_s, learner_s = (statistics.median(times[way]) for way in ("numpy", "learner"))
    return {
        "task": task_id,
        "episodes": job.eval_episodes * 2,
        "numpy_s": numpy_s,
        "learner_s": learner_s,
        "ratio": numpy_s / learner_s,
        "fitness": fitness,
        "times_s": times,
    }


def write(rows: list[dict[str, Any]], reps: int) -> None:
    """The rows as JSON, and a table of medians."""
    meta = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "command": f"benchmarks/evaluator_policy.py --reps {reps}",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "evaluator_policy.json").write_text(json.dumps({**meta, "rows": rows}, indent=2))
    lines = [
        f"# The evaluator, numpy actor against rebuilt learner ({meta['date']}, "
        f"{meta['machine']}, `{meta['command']}`)",
        "",
        "| task | episodes | numpy actor | learner rebuilt | ratio | fitness (numpy / learner) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['task']} | {row['episodes']} | {row['numpy_s']:.2f} s | "
            f"{row['learner_s']:.2f} s | {row['ratio']:.2f}x | "
            f"{row['fitness']['numpy']:.6g} / {row['fitness']['learner']:.6g} |"
        )
    lines += ["", f"Medians of {reps} whole sandboxed evaluations each way, alternated."]
    (RESULTS / "evaluator_policy.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Measure, write the results, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5, help="evaluations per task and way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        rows = [measure(task, steps, args.reps, Path(scratch)) for task, steps in TASKS.items()]
    write(rows, args.reps)
    print((RESULTS / "evaluator_policy.md").read_text())


if __name__ == "__main__":
    main()
