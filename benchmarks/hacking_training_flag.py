"""The training view of the hacking flag on real runs: how often it fires with and without the
noise test, and how often the candidate's own evaluator contradicts it.

`reward_hacking_suspect` also fires over training (rewardsmith/eureka_loop/hacking.py): the
reward return keeps rising after the fitness peak while fitness falls. A checkpoint judges the
policy on a few episodes (5 on Meta-World), so the fall is now counted only beyond twice its
standard error. This script recomputes the flag from the checkpoints kept in finished runs (no
training: it reads `outcome.json` of every trained candidate) under both rules, and sets each
flag beside the separate evaluator's fitness of the same final policy on 10 other episodes: a
flag that says "fitness fell to 0.3" on a policy the evaluator scores at or above its peak is
contradicted by the product's own fitness.

    .venv/bin/python benchmarks/hacking_training_flag.py /tmp/reach_runs /tmp/bp_runs ...

Writes benchmarks/results/hacking_training_flag.json and .md (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rewardsmith.eureka_loop.hacking import NOISE_SE, training_signals  # noqa: E402
from rewardsmith.runs import layout  # noqa: E402
from rewardsmith.runs.candidate import candidates_on_disk  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def candidate_rows(runs_dirs: list[Path]) -> list[dict[str, Any]]:
    """One row per trained candidate with checkpoints: its task, both rules' flags, its peak
    checkpoint fitness and its evaluator's fitness."""
    rows = []
    for runs_dir in runs_dirs:
        for run_path in sorted(p for p in runs_dir.iterdir() if (p / layout.RUN_INFO).is_file()):
            task = json.loads((run_path / layout.RUN_INFO).read_text())["task"]
            for files in candidates_on_disk(run_path):
                outcome = files.outcome()
                if not outcome or not outcome.get("ok") or not outcome.get("checkpoints"):
                    continue
                checkpoints = outcome["checkpoints"]
                fitness = [c["fitness"] for c in checkpoints if c.get("fitness") is not None]
                rows.append(
                    {
                        "run": run_path.name,
                        "task": task,
                        "candidate": str(files.key),
                        "flag_any_fall": training_signals(checkpoints, noise_se=0.0)["suspect"],
                        "flag_beyond_noise": training_signals(checkpoints)["suspect"],
                        "peak_checkpoint_fitness": max(fitness) if fitness else None,
                        "evaluator_fitness": outcome.get("fitness"),
                    }
                )
    return rows


def contradicted(row: dict[str, Any]) -> bool:
    """The evaluator scores the final policy at or above the checkpoint peak the flag says it
    fell from."""
    peak, evaluated = row["peak_checkpoint_fitness"], row["evaluator_fitness"]
    return peak is not None and evaluated is not None and evaluated >= peak


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per task and in all: candidates, flags under each rule, and flags the evaluator
    contradicts."""
    out = []
    for task in [*sorted({r["task"] for r in rows}), "all"]:
        mine = [r for r in rows if task in ("all", r["task"])]
        entry: dict[str, Any] = {"task": task, "candidates": len(mine)}
        for rule in ("flag_any_fall", "flag_beyond_noise"):
            flagged = [r for r in mine if r[rule]]
            entry[rule] = len(flagged)
            entry[f"{rule}_contradicted"] = sum(contradicted(r) for r in flagged)
        out.append(entry)
    return out


def markdown(table: list[dict[str, Any]], runs_dirs: list[Path]) -> str:
    """The summary as the results file's table."""
    lines = [
        "# The training view of the hacking flag on kept runs",
        "",
        f"Measured {dt.date.today().isoformat()} from the checkpoints of "
        + ", ".join(str(d) for d in runs_dirs)
        + f" (`benchmarks/hacking_training_flag.py`): any fall after the peak against a fall "
        f"beyond {NOISE_SE:g} standard errors. 'Contradicted': the evaluator scores the final "
        "policy at or above the checkpoint peak the flag says fitness fell from.",
        "",
        "| task | trained candidates | flagged (any fall) | of them contradicted "
        "| flagged (beyond the noise) | of them contradicted |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {e['task']} | {e['candidates']} | {e['flag_any_fall']} | "
        f"{e['flag_any_fall_contradicted']} | {e['flag_beyond_noise']} | "
        f"{e['flag_beyond_noise_contradicted']} |"
        for e in table
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Recompute the flag over the given folders of runs and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs_dirs", nargs="+", type=Path, help="folders of kept runs")
    args = parser.parse_args()
    missing = [d for d in args.runs_dirs if not d.is_dir()]
    if missing:
        raise SystemExit(f"not a folder of runs: {', '.join(map(str, missing))}")
    rows = candidate_rows(args.runs_dirs)
    table = summary(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {
        "measured_at": dt.datetime.now().isoformat(timespec="minutes"),
        "runs_dirs": [str(d) for d in args.runs_dirs],
        "noise_se": NOISE_SE,
        "summary": table,
        "candidates": rows,
    }
    (RESULTS / "hacking_training_flag.json").write_text(json.dumps(record, indent=2) + "\n")
    text = markdown(table, args.runs_dirs)
    (RESULTS / "hacking_training_flag.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
