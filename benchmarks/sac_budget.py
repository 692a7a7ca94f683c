"""What SAC budget learns a manipulation task on these CPUs: success against steps and minutes.

Trains the task's human reward (Meta-World's own v3 reward, in contract form) through the real
sandboxed training job, once per learner setting and seed, and records the success rate the
worker measured at each of its checkpoints (`--eval-episodes` deterministic episodes, at
`--checkpoints` points), the evaluator's success on fresh episodes at the end, and the wall time
and steps per second. The settings:

- `utd1`: SB3's SAC defaults (learning rate 3e-4, gamma 0.99, tau 0.005; one environment, one
  gradient step per environment step), as Text2Reward, CARD and LaRes train Meta-World;
- `utd1/4`: four environments stepped together, one gradient step per four transitions: four
  times fewer updates per step, which is where SAC's time goes on a CPU;
- `utd1/4-fast`: that, with the faster-moving settings that learn Fetch's reach here (learning
  rate 1e-3, gamma 0.95, tau 0.05; Meta-World's defaults since these measurements).

Each setting names its values in full, so a row means the same whatever the task's defaults.

Run (Meta-World lives in its own environment, `bash .ci/metaworld.sh`):

    .venv-metaworld/bin/python benchmarks/sac_budget.py --task metaworld-reach --steps 30000 \
        --setting utd1 --setting utd1/4

Adds its rows to benchmarks/results/sac_budget+TASK.json and .md (see docs/benchmarks.md), which
collect every budget tried on the task. Trainings that run side by side share the machine:
compare steps per second only between rows measured together.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rewardsmith.envs import load_task
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).resolve().parent / "results"
SB3_SAC = {"learning_rate": 3e-4, "gamma": 0.99, "tau": 0.005}
FAST_SAC = {"learning_rate": 1e-3, "gamma": 0.95, "tau": 0.05}
# Setting name: (environments stepped together, SAC keyword arguments over the task's).
SETTINGS: dict[str, tuple[int, dict[str, Any]]] = {
    "utd1": (1, SB3_SAC),
    "utd1/4": (4, SB3_SAC),
    "utd1/4-fast": (4, FAST_SAC),
}


def job_for(
    task_id: str, setting: str, steps: int, seed: int, args: argparse.Namespace
) -> TrainJob:
    """The task's SAC job at `steps`, with the setting's environments and keyword arguments."""
    n_envs, extra = SETTINGS[setting]
    job = make_job(load_task(task_id), steps=steps, seed=seed, algo="sac")
    return dataclasses.replace(
        job,
        n_envs=n_envs,
        hyperparams={**job.hyperparams, **extra},
        n_checkpoints=args.checkpoints,
        eval_episodes=args.eval_episodes,
    )


def train_one(task_id: str, setting: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Train the human reward once; its checkpoints' success, the evaluator's, and the time."""
    adapter = load_task(task_id)
    job = job_for(task_id, setting, args.steps, seed, args)
    with tempfile.TemporaryDirectory(prefix="sac-budget-") as scratch:
        outcome = train_reward(
            adapter,
            job,
            adapter.reward_source("human"),
            Path(scratch) / "candidate",
            ProcessSandbox(),
            Limits(wall_s=args.timeout),
        )
    if not outcome.ok:
        raise RuntimeError(f"{task_id} {setting} seed {seed}: {outcome.error}")
    curve = [
        {"steps": c.get("step"), "success_rate": c.get("success_rate"), "fitness": c.get("fitness")}
        for c in outcome.checkpoints
    ]
    row = {
        "setting": setting,
        "seed": seed,
        "n_envs": job.n_envs,
        "hyperparams": {k: v for k, v in job.hyperparams.items() if k != "policy_kwargs"},
        "steps": outcome.steps,
        "wall_s": round(outcome.wall_s, 1),
        "steps_per_s": round(outcome.steps / outcome.wall_s, 1),
        "final_success": outcome.success_rate,
        "checkpoints": curve,
    }
    print(json.dumps({k: v for k, v in row.items() if k != "checkpoints"}), flush=True)
    return row


def markdown(result: dict[str, Any]) -> str:
    """One row per training: the success curve at the checkpoints, then the fresh episodes."""
    lines = [
        f"# SAC budget: {result['task']}, human reward ({result['machine']})",
        "",
        "| setting | seed | steps | steps/s | minutes | success at checkpoints | final | measured |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        curve = ", ".join(
            f"{c['steps'] // 1000}k: {c['success_rate']:.1f}"
            for c in row["checkpoints"]
            if c["success_rate"] is not None and c["steps"] is not None
        )
        lines.append(
            f"| {row['setting']} | {row['seed']} | {row['steps']:,} | {row['steps_per_s']} | "
            f"{row['wall_s'] / 60:.1f} | {curve} | {row['final_success']} | {row['date']} |"
        )
    commands = sorted({row["command"] for row in result["rows"]})
    return "\n".join([*lines, "", *(f"`{command}`" for command in commands)]) + "\n"


def _key(row: dict[str, Any]) -> tuple[str, int, int]:
    return row["setting"], row["seed"], row["steps"]


def record(task: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Add `rows` to the task's results file, replacing earlier rows of the same setting, seed
    and steps, so one file collects every budget tried on the task."""
    path = RESULTS / f"sac_budget+{task}.json"
    kept = json.loads(path.read_text())["rows"] if path.exists() else []
    new = {_key(row) for row in rows}
    merged = sorted([*(r for r in kept if _key(r) not in new), *rows], key=_key)
    result = {
        "task": task,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "rows": merged,
    }
    RESULTS.mkdir(exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
    path.with_suffix(".md").write_text(markdown(result))
    return result


def main() -> None:
    """Train every setting and seed, then add the rows to the task's results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="metaworld-reach")
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--setting", action="append", choices=sorted(SETTINGS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--checkpoints", type=int, default=10)
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--parallel", type=int, default=2, help="trainings at once")
    parser.add_argument("--timeout", type=float, default=4 * 3600.0)
    args = parser.parse_args()
    settings = args.setting or sorted(SETTINGS)
    plan = [(setting, seed) for seed in args.seeds for setting in settings]
    with ThreadPoolExecutor(args.parallel) as pool:
        rows = list(pool.map(lambda p: train_one(args.task, p[0], p[1], args), plan))
    command = "benchmarks/sac_budget.py " + " ".join(sys.argv[1:])
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(markdown(record(args.task, [{**row, "date": date, "command": command} for row in rows])))


if __name__ == "__main__":
    main()
