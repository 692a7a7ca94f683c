"""What Meta-World's goal draw costs a training program, and what drawing once per process saves.

Meta-World draws its benchmark's 50 goal variations anew for every environment it makes (about
0.5 CPU-s: 50 resets of a throwaway copy of the task); a training program makes one per learner
environment and one per checkpoint episode, so `envs/metaworld_compat.py` keeps the first draw
for the process. This runs the SB3 training worker (`python -m rewardsmith.programs.train_sb3
JOB`) on a short metaworld-reach SAC job twice per repetition, alternated: as shipped (the
shared draw), and with Meta-World's own draw for every environment. Both run outside the
sandbox, which costs both the same; the job, seed and interpreter are the same, and the saved
actor and the checkpoint metrics must be equal. CPU time of the worker (and its reward process),
not wall time, so that other work on the machine does not count. Run with the Meta-World
environment (docs/robotics_suites.md):

    .venv-metaworld/bin/python benchmarks/metaworld_goal_draws.py --reps 3

Writes benchmarks/results/metaworld_goal_draws.json and .md (see docs/benchmarks.md).
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
TASK = "metaworld-reach"
STEPS = 4_000
# The worker as shipped, or with the shared draw left out so Meta-World draws for every env.
RUN = """
import runpy, sys
if sys.argv[1] == "own":
    import rewardsmith.envs.metaworld_compat as compat
    compat.share_goal_draws = lambda: None
sys.argv = ["train_sb3", sys.argv[2]]
runpy.run_module("rewardsmith.programs.train_sb3", run_name="__main__")
"""
VARIANTS = ("shared", "own")


def children_cpu() -> float:
    """CPU seconds of the finished children so far (the worker and its reward process)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def digest(path: Path) -> str:
    """A file's SHA-256, to hold the two variants' outputs equal."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_once(variant: str, template: Path, scratch: Path) -> dict[str, Any]:
    """CPU and wall seconds of one worker run on a fresh copy of the job, and its outputs' digests."""
    job_dir = scratch / variant
    shutil.rmtree(job_dir, ignore_errors=True)
    shutil.copytree(template, job_dir)
    env = {**os.environ, "HOME": str(scratch), "OMP_NUM_THREADS": "1"}
    cpu, start = children_cpu(), time.monotonic()
    subprocess.run([sys.executable, "-c", RUN, variant, str(job_dir)], check=True, env=env)
    return {
        "cpu_s": children_cpu() - cpu,
        "wall_s": time.monotonic() - start,
        "actor": digest(job_dir / files.ACTOR_FILE),
        "metrics": digest(job_dir / files.METRICS_FILE),
    }


def measure(reps: int) -> dict[str, Any]:
    """The worker with each variant, `reps` times each, alternated."""
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        adapter = load_task(TASK)
        template = scratch / "job"
        template.mkdir()
        job = make_job(adapter, steps=STEPS, seed=0)
        (template / files.JOB_FILE).write_text(job.to_json())
        source = adapter.reward_source("human")
        assert source is not None
        (template / files.REWARD_FILE).write_text(source)
        runs: dict[str, list[dict[str, Any]]] = {variant: [] for variant in VARIANTS}
        for _ in range(reps):
            for variant in VARIANTS:
                runs[variant].append(run_once(variant, template, scratch))
    outputs = {(run["actor"], run["metrics"]) for variant in VARIANTS for run in runs[variant]}
    cpu = {v: statistics.median(run["cpu_s"] for run in runs[v]) for v in VARIANTS}
    return {
        "task": TASK,
        "steps": STEPS,
        "algo": job.algo,
        "n_envs": job.n_envs,
        "checkpoints": job.n_checkpoints,
        "eval_episodes": job.eval_episodes,
        "median_cpu_s": cpu,
        "median_wall_s": {v: statistics.median(r["wall_s"] for r in runs[v]) for v in VARIANTS},
        "saved_cpu_s": cpu["own"] - cpu["shared"],
        "ratio": cpu["shared"] / cpu["own"],
        "same_actor_and_metrics": len(outputs) == 1,
        "runs": runs,
    }


def write(row: dict[str, Any], reps: int) -> None:
    """The row as JSON, and a table of medians."""
    meta = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "command": f"benchmarks/metaworld_goal_draws.py --reps {reps}",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "metaworld_goal_draws.json"
    out.write_text(json.dumps({**meta, **row}, indent=2))
    cpu, wall = row["median_cpu_s"], row["median_wall_s"]
    lines = [
        f"# The training worker with Meta-World's goals drawn once or for every environment "
        f"({meta['date']}, {meta['machine']}, `{meta['command']}`)",
        "",
        "| task | steps | envs made | shared draw | Meta-World's own draw | saved | ratio "
        "| same actor and metrics |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
        f"| {row['task']} ({row['algo']}, {row['n_envs']} envs) | {row['steps']:,} "
        f"| {row['n_envs'] + row['checkpoints'] * row['eval_episodes']} "
        f"| {cpu['shared']:.1f} CPU-s ({wall['shared']:.1f} s) "
        f"| {cpu['own']:.1f} CPU-s ({wall['own']:.1f} s) | {row['saved_cpu_s']:.1f} CPU-s "
        f"| {row['ratio']:.2f}x | {row['same_actor_and_metrics']} |",
        "",
        f"Medians of {reps} runs each, alternated, outside the sandbox; CPU time of the worker "
        "and its reward process. Envs made: the learner's, and one per checkpoint episode.",
    ]
    (RESULTS / "metaworld_goal_draws.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Measure, write the results, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    row = measure(args.reps)
    write(row, args.reps)
    print((RESULTS / "metaworld_goal_draws.md").read_text())


if __name__ == "__main__":
    main()
