"""What gymnax's plotting imports cost each sandboxed JAX program of a gymnax task.

Every tracer, trainer, evaluator and video program of a gymnax task (CartPole, Pendulum,
MountainCarContinuous on `--backend jax`) imports gymnax, and `import gymnax` imports Pong's
matplotlib pyplot and seaborn. `rewardsmith/rl/jax/lazy_plotting.py` defers both until something
plots. This starts fresh interpreters that do what those programs do first (`prepare_process()`
or not, then `import jax, gymnax` and make the environment), alternated start by start, and
times each whole interpreter. Run:

    .venv/bin/python benchmarks/gymnax_import.py --reps 7

Writes benchmarks/results/gymnax_import.json and .md (see docs/benchmarks.md). Compare the two as
a ratio within one run: the machines are shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
START = """
import sys
if sys.argv[1] == "deferred":
    from rewardsmith.rl.jax import prepare_process
    prepare_process()
import jax, gymnax
gymnax.make("CartPole-v1")
assert ("scipy.stats" in sys.modules) == (sys.argv[1] == "imported")
"""
VARIANTS = ("deferred", "imported")


def start_once(variant: str) -> float:
    """Seconds of one fresh interpreter's start, import and environment."""
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", START, variant], check=True)
    return time.monotonic() - began


def measure(reps: int) -> dict[str, Any]:
    """Each variant `reps` times, alternated."""
    times: dict[str, list[float]] = {variant: [] for variant in VARIANTS}
    for _ in range(reps):
        for variant in VARIANTS:
            times[variant].append(start_once(variant))
    medians = {variant: statistics.median(ts) for variant, ts in times.items()}
    return {
        "median_s": medians,
        "times_s": times,
        "saved_s": medians["imported"] - medians["deferred"],
        "ratio": medians["deferred"] / medians["imported"],
    }


def main() -> None:
    """Measure, write the results, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=7, help="starts per variant")
    args = parser.parse_args()
    result = measure(args.reps)
    meta = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "command": f"benchmarks/gymnax_import.py --reps {args.reps}",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "gymnax_import.json").write_text(json.dumps({**meta, **result}, indent=2))
    median = result["median_s"]
    table = [
        f"# A gymnax program's start with its plotting imports deferred "
        f"({meta['date']}, {meta['machine']}, `{meta['command']}`)",
        "",
        "| plotting imports | start, import jax and gymnax, make CartPole |",
        "|---|---:|",
        f"| deferred (`prepare_process()`) | {median['deferred']:.2f} s |",
        f"| imported | {median['imported']:.2f} s |",
        "",
        f"Saved {result['saved_s']:.2f} s a program ({result['ratio']:.2f}x); medians of "
        f"{args.reps} starts each, alternated, outside the sandbox.",
    ]
    (RESULTS / "gymnax_import.md").write_text("\n".join(table) + "\n")
    print((RESULTS / "gymnax_import.md").read_text())


if __name__ == "__main__":
    main()
