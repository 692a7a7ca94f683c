"""What TorchDynamo's import costs a training program, and what standing in for it saves.

torch's optimizers import TorchDynamo on their first call (`programs/no_dynamo.py`). This runs the
SB3 training worker (`python -m rewardsmith.programs.train_sb3 JOB`) on a tiny job twice per
repetition, alternated: as shipped (the stand-in), and with the stand-in kept out so the real
module loads. Both run outside the sandbox, which costs both the same; the job, seed and
interpreter are the same, and the saved actor must be equal. Run:

    .venv/bin/python benchmarks/optimizer_start.py --reps 5

Writes benchmarks/results/optimizer_start.json and .md (see docs/benchmarks.md). Compare the two
as a ratio within one run: the machines are shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.jobs.training import make_job

RESULTS = Path(__file__).resolve().parent / "results"
TASKS = ("line", "cartpole")
STEPS = 1024
# The worker as shipped, or with the stand-in's module replaced by an empty one first.
RUN = """
import runpy, sys, types
if sys.argv[1] == "real":
    sys.modules["rewardsmith.programs.no_dynamo"] = types.ModuleType("no_dynamo")
sys.argv = ["train_sb3", sys.argv[2]]
runpy.run_module("rewardsmith.programs.train_sb3", run_name="__main__")
"""
VARIANTS = ("stand-in", "real")


def run_once(variant: str, template: Path, scratch: Path) -> tuple[float, str]:
    """Seconds of one worker run on a fresh copy of the job, and its actor's digest."""
    job_dir = scratch / variant
    shutil.rmtree(job_dir, ignore_errors=True)
    shutil.copytree(template, job_dir)
    env = {**os.environ, "HOME": str(scratch), "OMP_NUM_THREADS": "1"}
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", RUN, variant, str(job_dir)], check=True, env=env)
    elapsed = time.monotonic() - start
    actor = hashlib.sha256((job_dir / files.ACTOR_FILE).read_bytes()).hexdigest()
    return elapsed, actor


def measure(reps: int) -> list[dict[str, Any]]:
    """Each task's worker run with the stand-in and with the real module, `reps` times each."""
    rows = []
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        for task_id in TASKS:
            adapter = load_task(task_id)
            template = scratch / f"{task_id}-job"
            template.mkdir()
            job = make_job(adapter, steps=STEPS, seed=0)
            (template / files.JOB_FILE).write_text(job.to_json())
            source = adapter.reward_source("human")
            assert source is not None
            (template / files.REWARD_FILE).write_text(source)
            times: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
            actors: set[str] = set()
            for _ in range(reps):
                for variant in VARIANTS:
                    elapsed, actor = run_once(variant, template, scratch)
                    times[variant].append(elapsed)
                    actors.add(actor)
            medians = {variant: statistics.median(ts) for variant, ts in times.items()}
            rows.append(
                {
                    "task": task_id,
                    "steps": STEPS,
                    "median_s": medians,
                    "times_s": times,
                    "ratio": medians["stand-in"] / medians["real"],
                    "same_actor": len(actors) == 1,
                }
            )
    return rows


def write(rows: list[dict[str, Any]], reps: int) -> None:
    """The rows as JSON, and a table of medians."""
    meta = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "command": f"benchmarks/optimizer_start.py --reps {reps}",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "optimizer_start.json").write_text(json.dumps({**meta, "rows": rows}, indent=2))
    lines = [
        f"# The training worker with and without TorchDynamo's import "
        f"({meta['date']}, {meta['machine']}, `{meta['command']}`)",
        "",
        "| task | steps | with the stand-in | with the real module | ratio | same actor |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        median = row["median_s"]
        lines.append(
            f"| {row['task']} | {row['steps']:,} | {median['stand-in']:.2f} s "
            f"| {median['real']:.2f} s | {row['ratio']:.2f}x | {row['same_actor']} |"
        )
    lines += ["", f"Medians of {reps} runs each, alternated, outside the sandbox."]
    (RESULTS / "optimizer_start.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Measure, write the results, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5, help="runs per task and variant")
    args = parser.parse_args()
    rows = measure(args.reps)
    write(rows, args.reps)
    print((RESULTS / "optimizer_start.md").read_text())


if __name__ == "__main__":
    main()
