"""The loop's own cost per round: a real run beside the same trainings run bare.

The setting is stable-eureka's measured LunarLander run (issue 35): 2 rounds x 2 candidates x
57,344 PPO steps, no final evaluation and no finals (`--finalists 1`), `--videos best` as by
default, the offline designer (the human reward and variants of it: real code for the critic's
smoke tests and the preference check, where a model replying with the environment's own reward
would skip both). Per run seed it measures:

- the run through `rewardsmith run --json`: its wall time, and its own split per round (each graph
  node's wall time, `runs/loop_time.py`): training (the `train` node: the trainings with their
  reward-free evaluations) against the rest (design, the critic, the preference check, analysis,
  selection and filming the round's best);
- the same number of trainings through `rewardsmith train` (human reward, the same steps), as
  many at a time as the run trains (`--parallel`, 2 here), with nothing else.

Target (issue 35): the loop's own time at most 3 s per round. Run:

    .venv/bin/python benchmarks/loop_cost.py --seeds 0 1

Writes benchmarks/results/loop_cost.json and .md (see docs/benchmarks.md). The run and the bare
trainings alternate in one process on a shared machine: compare them as ratios within a seed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
CLI = str(Path(sys.executable).with_name("rewardsmith"))


def timed_json(command: list[str]) -> tuple[float, dict[str, Any]]:
    """Run a `--json` command; its wall seconds and the JSON object it printed last."""
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return wall, json.loads(done.stdout[done.stdout.index("{") :])


def run_loop(args: argparse.Namespace, seed: int, runs: Path) -> dict[str, Any]:
    """The loop at the benchmark's setting: wall time and the run's own time per round."""
    wall, result = timed_json(
        [
            CLI, "run", args.task, "--rounds", str(args.rounds), "--samples", str(args.samples),
            "--steps", str(args.steps), "--parallel", str(args.parallel), "--seed", str(seed),
            "--no-evaluate", "--finalists", "1", "--sandbox", args.sandbox,
            "--runs-dir", str(runs), "--json",
        ]
    )  # fmt: skip
    loop_time = result.get("loop_time") or {}
    return {
        "wall_s": round(wall, 2),
        "trainings": count_trainings(Path(result["run_dir"])),
        "per_round": loop_time,
    }


def count_trainings(run_dir: Path) -> int:
    """Candidates that trained (an outcome with steps) in the run's rounds."""
    return sum(
        1
        for path in run_dir.glob("round_*/cand_*/outcome.json")
        if int(json.loads(path.read_text()).get("steps") or 0) > 0
    )


def run_bare(args: argparse.Namespace, trainings: int, seed: int, out: Path) -> float:
    """`trainings` plain `rewardsmith train` jobs, `--parallel` at a time: their wall seconds."""

    def train(i: int) -> float:
        wall, _ = timed_json(
            [
                CLI, "train", args.task, "--reward", "human", "--steps", str(args.steps),
                "--seed", str(seed * 100 + i), "--sandbox", args.sandbox,
                "--out", str(out / f"job_{seed}_{i}"), "--json",
            ]
        )  # fmt: skip
        return wall

    start = time.monotonic()
    with ThreadPoolExecutor(args.parallel) as pool:
        list(pool.map(train, range(trainings)))
    return round(time.monotonic() - start, 2)


def write(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The results as JSON and as the Markdown table docs/benchmarks.md quotes."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
        "command": "python benchmarks/loop_cost.py " + " ".join(sys.argv[1:]),
        "setting": vars(args),
    }
    (RESULTS / "loop_cost.json").write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    lines = [
        f"# The loop's own cost per round ({meta['when']})",
        "",
        f"`{meta['command']}` on {meta['machine']}.",
        "",
        "| seed | run wall | bare trainings wall | run - bare, per round | train node per round "
        "| loop's own per round | its largest parts |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        per_round = row["run"]["per_round"]
        parts = sorted(per_round.get("nodes_s", {}).items(), key=lambda kv: -kv[1])
        lines.append(
            f"| {row['seed']} | {row['run']['wall_s']:.1f} s | {row['bare_wall_s']:.1f} s "
            f"| {(row['run']['wall_s'] - row['bare_wall_s']) / args.rounds:.1f} s "
            f"| {per_round.get('training_s', 0):.1f} s | {per_round.get('loop_s', 0):.1f} s "
            f"| {', '.join(f'{k} {v:.1f} s' for k, v in parts[:4])} |"
        )
    (RESULTS / "loop_cost.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Each seed: the run, then its trainings bare; the files rewritten after each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="lunarlander")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--steps", type=int, default=57_344)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--sandbox", default="process")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="loop_cost_") as tmp:
        for seed in args.seeds:
            run = run_loop(args, seed, Path(tmp) / "runs")
            bare = run_bare(args, run["trainings"], seed, Path(tmp))
            rows.append({"seed": seed, "run": run, "bare_wall_s": bare})
            write(rows, args)
            print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
