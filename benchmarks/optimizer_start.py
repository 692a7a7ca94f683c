"""What a module the training worker stands in for costs its start, and what the stand-in saves;
and what computing the checkpoints' actions in numpy saves a tiny training.

torch's optimizers import TorchDynamo on their first call (`programs/no_dynamo.py`, the default
`--stand-in`); `import torch` imports its tracing machinery (`programs/no_tracing.py`). This runs
the SB3 training worker (`python -m rewardsmith.programs.train_sb3 JOB`) on a tiny job twice per
repetition, alternated: as shipped (the stand-in), and with the stand-in kept out so the real
modules load. `--stand-in numpy_checkpoints` weighs the checkpoints instead: as shipped they
compute the policy's deterministic action in numpy (`rl.sb3.actor`, as the evaluator does); the
other variant asks SB3's `predict`, as before 2026-12-07. Both run outside the sandbox, which
costs both the same; the job, seed and interpreter are the same, and the saved actor must be
equal. Wall and CPU time are both kept (CPU time moves less when something else shares the
cores). Run:

    .venv/bin/python benchmarks/optimizer_start.py --reps 5
    .venv/bin/python benchmarks/optimizer_start.py --reps 5 --stand-in no_tracing
    .venv/bin/python benchmarks/optimizer_start.py --reps 5 --stand-in numpy_checkpoints

Writes benchmarks/results/optimizer_start.json and .md (`optimizer_start+no_tracing.*` and
`checkpoint_policy.*` for the others; see docs/benchmarks.md). Compare the two as a ratio within
one run: the machines are shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import resource
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
# The worker as shipped, or with the stand-in's module replaced by an empty one first (or, for
# the checkpoints, with the numpy actor said not to cover the policy, so SB3's predict acts).
RUN = """
import runpy, sys, types
if sys.argv[1] == "real" and sys.argv[3] == "numpy_checkpoints":
    import rewardsmith.rl.sb3.actor as actor
    actor.actor_kind = lambda *spaces: None
elif sys.argv[1] == "real":
    sys.modules["rewardsmith.programs." + sys.argv[3]] = types.ModuleType(sys.argv[3])
sys.argv = ["train_sb3", sys.argv[2]]
runpy.run_module("rewardsmith.programs.train_sb3", run_name="__main__")
"""
VARIANTS = ("stand-in", "real")
STAND_INS = {  # the stand-in's module: what it keeps out, and its results' name
    "no_dynamo": ("TorchDynamo's import", "optimizer_start"),
    "no_tracing": ("torch's tracing machinery", "optimizer_start+no_tracing"),
    "numpy_checkpoints": ("SB3's predict at the checkpoints", "checkpoint_policy"),
}


def run_once(
    variant: str, stand_in: str, template: Path, scratch: Path
) -> tuple[float, float, str]:
    """Wall and CPU seconds of one worker run on a fresh copy of the job, and its actor's
    digest."""
    job_dir = scratch / variant
    shutil.rmtree(job_dir, ignore_errors=True)
    shutil.copytree(template, job_dir)
    env = {**os.environ, "HOME": str(scratch), "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    command = [sys.executable, "-c", RUN, variant, str(job_dir), stand_in]
    subprocess.run(command, check=True, env=env)
    elapsed = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    actor = hashlib.sha256((job_dir / files.ACTOR_FILE).read_bytes()).hexdigest()
    return elapsed, cpu, actor


def measure(reps: int, stand_in: str = "no_dynamo") -> list[dict[str, Any]]:
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
            cpu: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
            actors: set[str] = set()
            for _ in range(reps):
                for variant in VARIANTS:
                    elapsed, seconds, actor = run_once(variant, stand_in, template, scratch)
                    times[variant].append(elapsed)
                    cpu[variant].append(seconds)
                    actors.add(actor)
            medians = {variant: statistics.median(ts) for variant, ts in times.items()}
            cpu_medians = {variant: statistics.median(ts) for variant, ts in cpu.items()}
            rows.append(
                {
                    "task": task_id,
                    "steps": STEPS,
                    "median_s": medians,
                    "times_s": times,
                    "ratio": medians["stand-in"] / medians["real"],
                    "median_cpu_s": cpu_medians,
                    "cpu_s": cpu,
                    "cpu_ratio": cpu_medians["stand-in"] / cpu_medians["real"],
                    "same_actor": len(actors) == 1,
                }
            )
    return rows


def write(rows: list[dict[str, Any]], reps: int, stand_in: str = "no_dynamo") -> Path:
    """The rows as JSON, and a table of medians; returns the table's path."""
    what, stem = STAND_INS[stand_in]
    flag = "" if stand_in == "no_dynamo" else f" --stand-in {stand_in}"
    meta = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "command": f"benchmarks/optimizer_start.py --reps {reps}{flag}",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps({**meta, "rows": rows}, indent=2))
    lines = [
        f"# The training worker as shipped and with {what} "
        f"({meta['date']}, {meta['machine']}, `{meta['command']}`)",
        "",
        "| task | steps | as shipped | with it | ratio "
        "| CPU, as shipped | CPU, with it | CPU ratio | same actor |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        median, cpu = row["median_s"], row["median_cpu_s"]
        lines.append(
            f"| {row['task']} | {row['steps']:,} | {median['stand-in']:.2f} s "
            f"| {median['real']:.2f} s | {row['ratio']:.2f}x | {cpu['stand-in']:.2f} s "
            f"| {cpu['real']:.2f} s | {row['cpu_ratio']:.2f}x | {row['same_actor']} |"
        )
    lines += ["", f"Medians of {reps} runs each, alternated, outside the sandbox."]
    path = RESULTS / f"{stem}.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    """Measure, write the results, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5, help="runs per task and variant")
    parser.add_argument(
        "--stand-in", choices=sorted(STAND_INS), default="no_dynamo", help="the stand-in to weigh"
    )
    args = parser.parse_args()
    rows = measure(args.reps, args.stand_in)
    print(write(rows, args.reps, args.stand_in).read_text())


if __name__ == "__main__":
    main()
