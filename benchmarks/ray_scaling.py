"""K candidates on one Ray node against two nodes of the same size (`--executor ray`).

Starts a local Ray cluster on 127.0.0.1 (a head without CPUs, then one or two worker nodes of
`--cpus` CPUs each), trains K CartPole candidates (the human reward, different seeds) through
`RayExecutor` as the loop does, all submitted at once, and times the wall clock until the last
one is back in the store. On one machine the nodes share its cores, so two nodes cannot be
faster than the cores allow: the report gives the measured ratio and the ideal one for nodes
on separate machines (K jobs of equal length over twice the slots).

    .venv/bin/python benchmarks/ray_scaling.py [--k 4] [--steps 4096] [--cpus 1]

Writes benchmarks/results/ray_scaling.json and .md (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

# Before Ray is imported: loopback addresses only, no usage reports.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import ray  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from rewardsmith.cluster.ray_executor import RayExecutor  # noqa: E402
from rewardsmith.envs import load_task  # noqa: E402
from rewardsmith.jobs.training import make_job  # noqa: E402

RESULTS = Path(__file__).parent / "results"
LOCAL: dict[str, Any] = {"node_ip_address": "127.0.0.1", "include_dashboard": False}


def time_on(nodes: int, cpus: int, k: int, steps: int, work: Path) -> dict[str, Any]:
    """Wall clock for `k` candidates submitted at once to a fresh cluster of `nodes` nodes."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **LOCAL})
    for _ in range(nodes):
        cluster.add_node(num_cpus=cpus, **LOCAL)
    cluster.wait_for_nodes()
    executor = RayExecutor(cluster.address, sandbox="process")
    task = load_task("cartpole")
    human = task.reward_source("human")
    try:
        start = time.monotonic()
        with ThreadPoolExecutor(max_workers=k) as pool:
            futures = [
                pool.submit(
                    executor.train,
                    task,
                    make_job(task, steps=steps, seed=i),
                    human,
                    work / f"{nodes}n" / f"c{i}",
                )
                for i in range(k)
            ]
            outcomes = [f.result() for f in futures]
        wall = time.monotonic() - start
    finally:
        executor.close()
        cluster.shutdown()
        ray.shutdown()
    return {
        "nodes": nodes,
        "cpus_per_node": cpus,
        "wall_s": wall,
        "ok": sum(o.ok for o in outcomes),
        "nodes_used": len({o.placement["node"] for o in outcomes}),
    }


def main() -> int:
    """One node against two, reported beside the speedup separate machines would allow."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--steps", type=int, default=4096)
    parser.add_argument("--cpus", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        one = time_on(1, args.cpus, args.k, args.steps, Path(work))
        two = time_on(2, args.cpus, args.k, args.steps, Path(work))
    slots = args.cpus
    ideal = math.ceil(args.k / slots) / math.ceil(args.k / (2 * slots))
    report = {
        "date": dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_end": os.getloadavg()[0],
        "k": args.k,
        "steps": args.steps,
        "one_node": one,
        "two_nodes": two,
        "measured_speedup": one["wall_s"] / two["wall_s"],
        "ideal_speedup_separate_machines": ideal,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "ray_scaling.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "ray_scaling.md").write_text(
        f"# K candidates on 1 vs 2 Ray nodes\n\n{report['date']}, {report['machine']}, load "
        f"{report['load_average_end']:.1f} at the end. K = {args.k} CartPole candidates of "
        f"{args.steps:,} steps (training and evaluation), nodes of {args.cpus} CPU(s).\n\n"
        "| nodes | wall s | jobs ok | nodes used |\n|---:|---:|---:|---:|\n"
        f"| 1 | {one['wall_s']:.1f} | {one['ok']} | {one['nodes_used']} |\n"
        f"| 2 | {two['wall_s']:.1f} | {two['ok']} | {two['nodes_used']} |\n\n"
        f"Measured speedup {report['measured_speedup']:.2f}x; on separate machines the ideal "
        f"is {ideal:.1f}x (twice the slots for {args.k} equal jobs).\n"
    )
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
