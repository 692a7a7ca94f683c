"""Can a thin rung's spare core speed up the one training it runs? (issue 35)

Successive halving's last rung trains one candidate while, on two cores, the other core idles.
The issue asks to give the spare cores to that training ("more environments or threads"). This
measures what a second core buys one sandboxed SB3 training at the task's search budget: the
same job (task defaults, human reward, process sandbox) with `torch_threads` 1 and 2, alternated,
`--repeats` times each; the medians and their ratio. A time is the whole job as the loop runs
it: the sandboxed worker, then the reward-free evaluator (which uses the same threads).

    .venv/bin/python benchmarks/thin_rung.py --task cartpole --task pendulum

Results: `benchmarks/results/thin_rung.{json,md}`.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from rewardsmith.envs import load_task
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).parent / "results"


def one_training(task_id: str, threads: int, folder: Path) -> float:
    """Seconds for one sandboxed training at the search budget, evaluation included."""
    adapter = load_task(task_id)
    job = make_job(adapter, steps=None, seed=0, search=True)
    job.torch_threads = threads
    began = time.monotonic()
    outcome = train_reward(
        adapter, job, adapter.reward_source("human"), folder, ProcessSandbox(), Limits(wall_s=900)
    )
    if not outcome.ok:
        raise SystemExit(f"{task_id} failed: {outcome.error}")
    return time.monotonic() - began


def main() -> None:
    """Time each task at 1 and 2 threads, alternately; write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", default=[])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for task_id in args.task or ["cartpole", "pendulum"]:
        times: dict[int, list[float]] = {1: [], 2: []}
        with tempfile.TemporaryDirectory() as tmp:
            for repeat in range(args.repeats):
                for threads in (1, 2):
                    folder = Path(tmp) / f"t{threads}_{repeat}"
                    times[threads].append(one_training(task_id, threads, folder))
        one, two = statistics.median(times[1]), statistics.median(times[2])
        rows.append(
            {
                "task": task_id,
                "steps": make_job(load_task(task_id), steps=None, seed=0, search=True).steps,
                "threads_1_s": times[1],
                "threads_2_s": times[2],
                "median_1_s": one,
                "median_2_s": two,
                "ratio": two / one,
            }
        )
        print(json.dumps(rows[-1]))
    record = {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M"),
        "machine": f"{platform.node()} {platform.machine()}",
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "thin_rung.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        "| task | steps | 1 thread (median s) | 2 threads (median s) | 2 / 1 |",
        "|---|---:|---:|---:|---:|",
        *(
            f"| {r['task']} | {r['steps']:,} | {r['median_1_s']:.1f} | {r['median_2_s']:.1f} "
            f"| {r['ratio']:.2f} |"
            for r in rows
        ),
    ]
    (RESULTS / "thin_rung.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
