"""Does the offline designer beat or match the human reward at equal training budget?

Runs the full loop (offline designer, default rounds and samples, final evaluation with fresh
seeds) on CartPole and Pendulum for several seeds, and records each run's evaluated best fitness,
the human and sparse rewards' fitness, and the human-normalised score. Rows of earlier
invocations for other (task, seed) pairs are kept, each with the time it was measured.

    .venv/bin/python benchmarks/offline_designer.py [--tasks cartpole pendulum] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path

from rewardsmith.choices import SandboxChoice
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.store import RunStore

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    """One full loop per (task, seed), its best reward set against the human and sparse ones."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "pendulum"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--steps", type=int, default=None, help="default: each task's own budget")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as runs_dir:
        for task in args.tasks:
            for seed in args.seeds:
                config = LoopConfig(
                    task_id=task,
                    rounds=args.rounds,
                    samples=args.samples,
                    steps=args.steps,
                    seed=seed,
                    sandbox=SandboxChoice.PROCESS,
                )
                start = time.monotonic()
                result = start_run(config, Path(runs_dir))
                run = RunStore(Path(runs_dir)).open_run(result["run_dir"])
                by_key = {(c["round"], c["idx"]): c for c in run.candidates()}
                best_dir = Path(result["best_reward_path"]).parent
                notes = json.loads((best_dir / "genome.json").read_text())
                rows.append(
                    {
                        "task": task,
                        "seed": seed,
                        "measured_at": dt.datetime.now().isoformat(timespec="minutes"),
                        "wall_s": round(time.monotonic() - start, 1),
                        "search_best_fitness": result["best_fitness"],
                        "evaluated_best_fitness": result["evaluated_best_fitness"],
                        "human_fitness": result["human_fitness"],
                        "sparse_fitness": result["sparse_fitness"],
                        "human_normalized_score": result["human_normalized_score"],
                        "human_search_fitness": by_key[(0, 0)].get("fitness"),
                        "per_round_best": [h["round_best_fitness"] for h in result["history"]],
                        "best_so_far": [h["best_fitness"] for h in result["history"]],
                        "best_candidate": best_dir.parent.name + "/" + best_dir.name,
                        "best_genome": notes,
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "offline_designer.json"
    new = {(r["task"], r["seed"]) for r in rows}
    kept = json.loads(path.read_text())["runs"] if path.exists() else []
    rows = [r for r in kept if (r["task"], r["seed"]) not in new and "best_so_far" in r] + rows
    rows.sort(key=lambda r: (r["task"], r["seed"]))
    path.write_text(json.dumps({"args": vars(args), "runs": rows}, indent=2))
    lines = [
        "| task | seed | wall s | human in round 0 | best so far after each round | best candidate | best (eval) | human (eval) | sparse (eval) | human-normalised |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rounds = ", ".join(f"{v:.3g}" for v in r["best_so_far"] if v is not None)
        score = r["human_normalized_score"]
        genome = r["best_genome"]
        weights = ", ".join(f"{k} x{v:.2g}" for k, v in genome["human_weights"].items())
        terms = ", ".join(f"{t['kind']}({t['field']})" for t in genome["shaping"])
        design = "; ".join(p for p in (weights, terms) if p) or "human, unchanged"
        lines.append(
            f"| {r['task']} | {r['seed']} | {r['wall_s']} | {r['human_search_fitness']:.4g} | {rounds} | "
            f"{r['best_candidate']}: {design} | {r['evaluated_best_fitness']:.4g} | {r['human_fitness']:.4g} | "
            f"{r['sparse_fitness']:.4g} | {'n/a' if score is None else f'{score:.3f}'} |"
        )
    (RESULTS / "offline_designer.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
