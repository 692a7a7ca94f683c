"""What the sandbox costs: start-up time and per-step training overhead, per backend.

For each backend (an unsandboxed subprocess as the baseline, the process backend, and Docker where
its engine and image are ready) it measures:

- start-up: the median wall time to run a trivial module (`python -m this`) in the sandbox;
- per step: the same CartPole PPO training job (human reward, seed 0) at two budgets, each the
  fastest of three runs; the difference cancels the fixed costs (imports, start-up), leaving the
  marginal cost of a training step, reported as steps per CPU second (steady on a shared
  machine) and steps per wall-clock second.

Writes benchmarks/results/sandbox_overhead.json and .md.
Run: `python benchmarks/sandbox_overhead.py`.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.jobs.training import make_job
from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.executor import (
    CappedReader,
    ProcessSandbox,
    pipe_chunks,
    worker_environment,
)
from rewardsmith.sandbox.types import Limits, SandboxRun

RESULTS = Path(__file__).parent / "results"
STEPS = (2048, 16384)
STARTS = 7
REPEATS = 3  # the minimum of repeats: other jobs on the machine only ever add time
LIMITS = Limits(wall_s=900, memory_mb=4096)


class Unsandboxed:
    """The baseline: a plain subprocess with the worker's environment and nothing else."""

    name = "unsandboxed"

    def run(
        self,
        module: str,
        args: list[str],
        writable: list[Path],
        limits: Limits,
        on_poll: Callable[[], None] | None = None,
        readable: list[Path] | None = None,
    ) -> SandboxRun:
        """`Sandbox.run` without confinement or limits (the output cap aside); never times out."""
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=writable[0],
            env=worker_environment(writable[0]),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        reader = CappedReader(pipe_chunks(proc.stdout), limits.output_bytes)
        reader.start()
        while True:
            try:
                proc.wait(timeout=0.25)
                break
            except subprocess.TimeoutExpired:
                if on_poll is not None:
                    on_poll()
        reader.join()
        out = reader.output
        return SandboxRun(
            proc.returncode, False, time.monotonic() - start, out.text(), out.total, self.name
        )


def startup_s(sandbox: Any) -> float:
    """Median wall seconds to start `python -m this` in `sandbox`: the fixed cost of every run."""
    times = []
    for _ in range(STARTS):
        with tempfile.TemporaryDirectory(prefix="rs-bench-") as tmp:
            run = sandbox.run("this", [], [Path(tmp)], LIMITS)
            assert run.returncode == 0, run.output
            times.append(run.wall_s)
    return statistics.median(times)


class WorkerCpu:
    """CPU seconds of the worker running `job_dir`, read from /proc while it runs.

    The same reading for every backend: sandboxed workers (bwrap's or a container's) are host
    processes too. The last poll misses at most 0.25 s, alike at both budgets.
    """

    def __init__(self, job_dir: Path) -> None:
        self.needle = f"rewardsmith.programs.train_sb3\0{job_dir}".encode()
        self.cpu_s = 0.0
        self.ticks = os.sysconf("SC_CLK_TCK")

    def poll(self) -> None:
        """The `on_poll` hook: find the worker by its command line and keep its highest reading."""
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                if self.needle in (entry / "cmdline").read_bytes():
                    stat = (entry / "stat").read_text()
                    fields = stat[stat.rfind(")") + 2 :].split()
                    cpu = (int(fields[11]) + int(fields[12])) / self.ticks  # utime + stime
                    self.cpu_s = max(self.cpu_s, cpu)


def training_s(sandbox: Any, steps: int) -> tuple[float, float]:
    """Wall and CPU seconds of the worker alone (no evaluator) on the CartPole job of `steps`."""
    adapter = load_task("cartpole")
    job = make_job(adapter, steps=steps, seed=0)
    job.n_checkpoints, job.eval_episodes = 1, 1
    with tempfile.TemporaryDirectory(prefix="rs-bench-") as tmp:
        job_dir = Path(tmp) / "job"
        job_dir.mkdir()
        (job_dir / files.REWARD_FILE).write_text(adapter.reward_source("human") or "")
        job.write(job_dir)
        meter = WorkerCpu(job_dir)
        run = sandbox.run(
            "rewardsmith.programs.train_sb3", [str(job_dir)], [job_dir], LIMITS, on_poll=meter.poll
        )
        assert run.returncode == 0 and (job_dir / files.RESULT_FILE).exists(), run.output[-2000:]
        return run.wall_s, meter.cpu_s


def measure(backends: list[Any]) -> dict[str, dict[str, Any]]:
    """Interleave backends and budgets, so load from other jobs falls on all of them alike."""
    walls: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(REPEATS):
        for sandbox in backends:
            for steps in STEPS:
                walls.setdefault((sandbox.name, steps), []).append(training_s(sandbox, steps))
    results = {}
    span = STEPS[1] - STEPS[0]
    for sandbox in backends:
        short, long = (min(walls[sandbox.name, steps]) for steps in STEPS)
        short_cpu, long_cpu = (min(c for _, c in walls[sandbox.name, steps]) for steps in STEPS)
        start = startup_s(sandbox)
        row = {
            "startup_s": start,
            "job_wall_s": {str(steps): min(walls[sandbox.name, steps])[0] for steps in STEPS},
            "job_cpu_s": {str(STEPS[0]): short_cpu, str(STEPS[1]): long_cpu},
            "steps_per_s": span / (long[0] - short[0]),
            "steps_per_cpu_s": span / (long_cpu - short_cpu),
        }
        print(
            f"{sandbox.name}: start-up {start * 1000:.0f} ms, "
            f"{row['steps_per_cpu_s']:,.0f} steps per CPU s",
            flush=True,
        )
        results[sandbox.name] = row
    return results


def main() -> int:
    """Every backend usable here, each set against the unsandboxed baseline as a ratio."""
    backends: list[Any] = [Unsandboxed(), ProcessSandbox()]
    nobwrap = ProcessSandbox(use_bwrap=False)
    if backends[1].bwrap and nobwrap.confined:  # what a machine with only pip packages gets
        nobwrap.name = "process-nobwrap"
        backends.append(nobwrap)
    ready, why = docker_status()
    if ready:
        backends.append(DockerSandbox())
    results = measure(backends)
    base = results["unsandboxed"]
    for row in results.values():
        row["startup_ratio"] = row["startup_s"] / base["startup_s"]
        row["steps_per_s_ratio"] = row["steps_per_s"] / base["steps_per_s"]
        row["steps_per_cpu_s_ratio"] = row["steps_per_cpu_s"] / base["steps_per_cpu_s"]
    record = {
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg": os.getloadavg(),
        },
        "process_isolation": ProcessSandbox().isolation(),
        "nobwrap_isolation": nobwrap.isolation() if nobwrap in backends else None,
        "docker": why,
        "job": f"cartpole PPO, human reward, seed 0, {STEPS[0]} and {STEPS[1]} steps",
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "sandbox_overhead.json").write_text(json.dumps(record, indent=2) + "\n")
    (RESULTS / "sandbox_overhead.md").write_text(markdown(record))
    print(markdown(record))
    return 0


def markdown(record: dict[str, Any]) -> str:
    """The record as results/sandbox_overhead.md shows it, with how each number was taken."""
    lines = [
        "# Sandbox overhead",
        "",
        f"Job: {record['job']}. Start-up: median of {STARTS} runs of `python -m this`.",
        "Steps/s: the marginal cost of a step (difference of the two budgets, each the fastest of",
        f"{REPEATS} runs), so imports and start-up cancel. CPU seconds (the worker process's, read",
        "from /proc for every backend) are the steadier measure on a shared machine; wall-clock",
        "steps/s move with the load of other jobs.",
        f"Machine: {record['machine']['cpus']} CPUs, "
        f"load average {record['machine']['load_avg'][0]:.1f} "
        "at the end (other jobs share it: read the ratios, not the absolute numbers).",
        f"Process backend here: {record['process_isolation']}. Docker: {record['docker']}.",
        *(
            [f"Without bubblewrap (process-nobwrap): {record['nobwrap_isolation']}."]
            if record.get("nobwrap_isolation")
            else []
        ),
        "",
        "| backend | start-up | vs unsandboxed | steps per CPU s | vs unsandboxed "
        "| steps/s (wall) | vs unsandboxed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in record["results"].items():
        lines.append(
            f"| {name} | {row['startup_s'] * 1000:.0f} ms | {row['startup_ratio']:.2f}x | "
            f"{row['steps_per_cpu_s']:,.0f} | {row['steps_per_cpu_s_ratio']:.2f}x | "
            f"{row['steps_per_s']:,.0f} | {row['steps_per_s_ratio']:.2f}x |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
