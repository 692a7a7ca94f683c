"""What the video program's compilation cache saves on the JAX backend (`jobs/compile_store.py`).

For each task: one JAX training on the human reward (no cache), then its video again and again in
the process sandbox (`jobs/video.record_video`, the defaults), alternating a cold program (an
empty store: it compiles its episode, as every video did before the cache) and a warm one (the
store the first cold one filled: every video of the task after its first). Cold and warm alternate
so that load from other jobs falls on both; the comparison is their ratio. Every video must have
the same frames. Writes benchmarks/results/jax_video_cache.{json,md}; other tasks' rows are kept.

    .venv/bin/python benchmarks/jax_video_cache.py --task cartpole --task halfcheetah --repeats 2
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import imageio.v3 as iio

from rewardsmith.envs import load_task
from rewardsmith.jobs import compile_store
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.jobs.video import record_video
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).parent / "results"
STEPS = {"cartpole": 2048}  # others: one update of the task's PPO (the policy does not matter)


def timed_video(task: str, candidate: Path, cache_root: Path, dest: Path) -> tuple[float, str]:
    """One sandboxed video with the stores under `cache_root`: wall seconds, the frames' digest."""
    os.environ[compile_store.CACHE_ENV] = str(cache_root)
    adapter = load_task(task)
    job = make_job(adapter, steps=STEPS.get(task, 10_240), seed=0, backend="jax")
    start = time.monotonic()
    outcome = record_video(adapter, job, candidate, dest, ProcessSandbox())
    wall = time.monotonic() - start
    if outcome.reason is not None:
        raise SystemExit(f"{task}: no video: {outcome.reason}")
    return wall, hashlib.sha256(iio.imread(dest, index=None).tobytes()).hexdigest()


def measure(task: str, repeats: int, folder: Path) -> dict[str, Any]:
    """Train once, then alternate cold and warm videos of that policy."""
    adapter = load_task(task)
    os.environ[compile_store.CACHE_ENV] = "off"
    job = make_job(adapter, steps=STEPS.get(task, 10_240), seed=0, backend="jax")
    candidate = folder / task
    outcome = train_reward(
        adapter, job, adapter.reward_source("human"), candidate, ProcessSandbox(), Limits()
    )
    if not outcome.ok:
        raise SystemExit(f"{task}: training failed: {outcome.error}")
    warm_root = folder / "warm"
    cold, warm, digests = [], [], set()
    for repeat in range(repeats):
        cold_root = folder / f"cold{repeat}"
        wall, digest = timed_video(task, candidate, cold_root, folder / "cold.mp4")
        cold.append(wall)
        digests.add(digest)
        if repeat == 0:
            shutil.copytree(cold_root, warm_root)
        before = sorted(p.name for p in (warm_root / "xla-video" / task).iterdir())
        wall, digest = timed_video(task, candidate, warm_root, folder / "warm.mp4")
        warm.append(wall)
        digests.add(digest)
        if sorted(p.name for p in (warm_root / "xla-video" / task).iterdir()) != before:
            raise SystemExit(f"{task}: a warm video program compiled something new")
    return {
        "task": task,
        "repeats": repeats,
        "cold_s": cold,
        "warm_s": warm,
        "cold_median_s": statistics.median(cold),
        "warm_median_s": statistics.median(warm),
        "ratio": statistics.median(warm) / statistics.median(cold),
        "frames_identical": len(digests) == 1,
        "measured": dt.datetime.now().isoformat(timespec="minutes"),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
    }


def write(results: dict[str, Any]) -> None:
    """JSON (kept across invocations, task by task) and the Markdown table."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "jax_video_cache.json"
    merged = json.loads(path.read_text()) if path.exists() else {}
    merged.update(results)
    path.write_text(json.dumps(merged, indent=2) + "\n")
    lines = [
        "| task | cold video program (median) | warm (median) | warm / cold | same frames |",
        "|---|---:|---:|---:|---|",
    ]
    for row in merged.values():
        lines.append(
            f"| {row['task']} | {row['cold_median_s']:.1f} s | {row['warm_median_s']:.1f} s | "
            f"{row['ratio']:.2f} | {'yes' if row['frames_identical'] else 'NO'} |"
        )
    (RESULTS / "jax_video_cache.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    """Measure each task named, then rewrite the results table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", required=True)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    results = {}
    for task in args.task:
        with tempfile.TemporaryDirectory(prefix="rewardsmith-videocache-") as tmp:
            results[task] = measure(task, args.repeats, Path(tmp))
    write(results)


if __name__ == "__main__":
    main()
