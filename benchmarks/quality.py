"""The quality table: does the evolved reward beat the task's human reward, task by task?

For one task, runs the whole loop with the offline designer at the task's default budgets (rounds,
samples, steps per candidate), once per seed; each run ends with its final evaluation, where the
best, the human and the sparse reward are retrained on fresh seeds. Each task's results go to
`benchmarks/results/quality/<task>.json` (rows of earlier invocations for other seeds are kept),
so the table can be filled task by task, one sitting each. `--table` assembles the table from
every result present into `benchmarks/results/quality.md` and docs/benchmarks.md.

    .venv/bin/python benchmarks/quality.py --task cartpole --seeds 0 1 2
    .venv/bin/python benchmarks/quality.py --task reacher --seeds 0 1 2   # the Reacher task file
    .venv/bin/python benchmarks/quality.py --task mountaincar-continuous --backend jax
    .venv/bin/python benchmarks/quality.py --task halfcheetah --steps 50000   # a reduced budget
    .venv/bin/python benchmarks/quality.py --table
    # more evaluation seeds for runs kept with --keep-runs (seeds already trained are reused):
    .venv/bin/python benchmarks/quality.py --task lunarlander --finalists 3 --seeds 0 1 2 3 \
        --eval-seeds 6 --reevaluate /tmp/ll_runs

"Beats the human reward beyond the noise": the best's fresh-seed fitnesses (pooled over the
run seeds) exceed the human's by more than twice the standard error of the difference; "as good
within the noise": they fall short by no more than that (equal counts).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from rewardsmith.choices import Backend, SandboxChoice, Schedule
from rewardsmith.envs import list_tasks, load_task
from rewardsmith.envs.registry import TaskNotFoundError
from rewardsmith.eureka_loop.runner import evaluate_run, start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.jobs.training import make_job
from rewardsmith.runs.candidate import TrainingFiles
from rewardsmith.runs.schema import read_record
from rewardsmith.runs.store import RunStore
from rewardsmith.runs.versus_human import versus_human

RESULTS = Path(__file__).parent / "results"
TASK_RESULTS = RESULTS / "quality"
DOC = Path(__file__).parent.parent / "docs" / "benchmarks.md"
TABLE_START, TABLE_END = "<!-- quality-table -->", "<!-- /quality-table -->"
DEFAULT_EVAL_SEEDS = 2
"""The evaluation seeds per arm of the table's first rows: a file at another number is named so."""


def task_file_for(task: str) -> Path | None:
    """An example task file (`envs/examples/<task>_task.toml`) for a task that is not built in."""
    try:
        load_task(task)
        return None
    except TaskNotFoundError:
        pass
    path = Path(str(resources.files("rewardsmith.envs.examples").joinpath(f"{task}_task.toml")))
    if not path.is_file():
        known = ", ".join([*list_tasks(), "reacher", "swimmer", "..."])
        raise SystemExit(
            f"unknown task {task!r}: a built-in task or an example task file ({known})"
        )
    return path


def training_steps(run_dir: Path, runs_dir: Path) -> int:
    """Every training step the run paid for: its candidates', their confirming trainings'
    (`--confirm-best`), the finals' and its final evaluation's."""
    with RunStore(runs_dir).open_run(run_dir) as run:
        steps = sum(int(c.get("steps") or 0) for c in run.candidates())
        arms = sorted(p for p in run.evaluation_dir.iterdir() if p.is_dir())
        arms += sorted(p.parent for p in run.path.glob("round_*/cand_*/confirm/outcome.json"))
        arms += sorted(p.parent for p in run.path.glob("round_*/cand_*/finals/s*/outcome.json"))
    for arm in arms:
        steps += int((TrainingFiles(arm).outcome() or {}).get("steps") or 0)
    return steps


def task_ref(task: str) -> tuple[str | None, Path | None]:
    """`load_task`'s arguments for a built-in task or an example task file's name."""
    task_file = task_file_for(task)
    return (task if task_file is None else None, task_file)


@dataclass(frozen=True)
class Variant:
    """How a row's runs differ from the task's defaults; each variant is a row of its own."""

    backend: str = "sb3"
    confirm_best: bool = False
    steps: int | None = None
    """Steps per candidate (search and final evaluation alike); None: the task's own."""
    schedule: str = "full"
    rounds: int | None = None
    """Rounds and candidates per round; None: `rewardsmith run`'s defaults."""
    samples: int | None = None
    finalists: int = 1
    """The selection rule: 1 is the search's best on its one seed (the rule of the table's first
    rows); more plays the finals (`eureka_loop/finals.py`) with `finalist_seeds` seeds each."""
    finalist_seeds: int = 2


def result_path(
    task: str, variant: Variant = Variant(), eval_seeds: int = DEFAULT_EVAL_SEEDS
) -> Path:
    """A task's result file: `<task>.json` on SB3, `<task>@<backend>.json` on another backend,
    whose budgets and learner differ, `+confirm` under `--confirm-best` and `+halving` under
    `--schedule halving`, `+finalsFxS` with the finals, `+evalN` at N evaluation seeds per arm
    (not 2), `+RxK` at other rounds and candidates, whose searches differ (each a row of its
    own, never pooled with another). A reduced `--steps` keeps the name: the budgets recorded in
    the file say it, and rows at other budgets are never mixed in (`measure`)."""
    name = task if variant.backend == "sb3" else f"{task}@{variant.backend}"
    name += "+confirm" if variant.confirm_best else ""
    name += "+halving" if variant.schedule != "full" else ""
    if variant.finalists > 1:
        name += f"+finals{variant.finalists}x{variant.finalist_seeds}"
    if eval_seeds != DEFAULT_EVAL_SEEDS:
        name += f"+eval{eval_seeds}"
    if variant.rounds is not None or variant.samples is not None:
        defaults = LoopConfig(task_id=task)
        name += f"+{variant.rounds or defaults.rounds}x{variant.samples or defaults.samples}"
    return TASK_RESULTS / f"{name}.json"


def run_seed(
    task: str, seed: int, eval_seeds: int, runs_dir: Path, variant: Variant = Variant()
) -> dict[str, Any]:
    """One whole loop at the variant's budgets, with its fresh-seed final evaluation."""
    task_file = task_file_for(task)
    config = LoopConfig(
        task_id=task if task_file is None else "",
        task_file=str(task_file) if task_file else None,
        seed=seed,
        eval_seeds=eval_seeds,
        sandbox=SandboxChoice.PROCESS,
        backend=Backend(variant.backend),
        confirm_best=variant.confirm_best,
        steps=variant.steps,
        schedule=Schedule(variant.schedule),
        finalists=variant.finalists,
        finalist_seeds=variant.finalist_seeds,
        **{k: v for k in ("rounds", "samples") if (v := getattr(variant, k)) is not None},
    )
    start = time.monotonic()
    result = start_run(config, runs_dir)
    return row(seed, Path(result["run_dir"]), runs_dir, time.monotonic() - start)


def reevaluate_seed(task: str, seed: int, eval_seeds: int, runs_dir: Path) -> dict[str, Any]:
    """A kept run of `seed` (`--keep-runs`), its final evaluation extended to `eval_seeds` seeds
    per arm; the seeds it trained already are reused. Its wall is the run's own (from its
    created and last-updated times, before this) plus the extension's."""
    infos = [read_record(s.path / "run.json") for s in RunStore(runs_dir).list_runs()]
    found = [i for i in infos if i["task"] == task and i["seed"] == seed]
    if len(found) != 1:
        raise SystemExit(f"{runs_dir} holds {len(found)} runs of {task} seed {seed}, not one")
    info = found[0]
    run_dir = runs_dir / info["run_id"]
    created, updated = (dt.datetime.fromisoformat(info[k]) for k in ("created_at", "updated_at"))
    start = time.monotonic()
    evaluate_run(run_dir, runs_dir, seeds=eval_seeds)
    extension = time.monotonic() - start
    wall = (updated - created).total_seconds() + extension
    return {**row(seed, run_dir, runs_dir, wall), "reevaluation_wall_s": round(extension, 1)}


def row(seed: int, run_dir: Path, runs_dir: Path, wall: float) -> dict[str, Any]:
    """One run's row: what its search found and what its final evaluation measured."""
    with RunStore(runs_dir).open_run(run_dir) as run:
        evaluation = read_record(run.evaluation_file)
        summary = run.info().get("summary", {})
    return {
        "seed": seed,
        "measured_at": dt.datetime.now().isoformat(timespec="minutes"),
        "wall_s": round(wall, 1),
        "training_steps": training_steps(run_dir, runs_dir),
        "best_candidate": summary.get("best_candidate"),
        "search_best_fitness": summary.get("best_fitness"),
        "best": evaluation["best"]["per_seed"],
        "human": evaluation["human"]["per_seed"],
        "sparse": evaluation["sparse"]["per_seed"],
        "best_is_human_reward": evaluation.get("best_is_human_reward", False),
        "human_normalized_score": evaluation.get("human_normalized_score"),
        "versus_human": (evaluation.get("versus_human") or {}).get("verdict"),
        "held_up": (evaluation.get("held_up") or {}).get("verdict"),
    }


def budgets(task: str, eval_seeds: int, variant: Variant = Variant()) -> dict[str, Any]:
    """The budgets the task's rows were measured at, recorded beside them for the table."""
    adapter = load_task(*task_ref(task))
    defaults = LoopConfig(task_id=task)
    backend = variant.backend
    job = make_job(adapter, steps=variant.steps, seed=0, backend=backend, search=True)
    default_steps = make_job(adapter, steps=None, seed=0, backend=backend, search=True).steps
    return {
        "rounds": variant.rounds or defaults.rounds,
        "samples": variant.samples or defaults.samples,
        "finalists": variant.finalists,
        "finalist_seeds": variant.finalist_seeds if variant.finalists > 1 else 0,
        "steps_per_candidate": job.steps,
        "default_steps_per_candidate": default_steps,
        "eval_seeds": eval_seeds,
        "algo": job.algo if backend == "sb3" else f"{backend} {job.algo}",
        "backend": backend,
        "confirm_best": variant.confirm_best,
        "schedule": variant.schedule,
    }


def machine() -> dict[str, Any]:
    """Where the rows were measured: wall times compare only on like machines."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def measure(
    task: str,
    seeds: list[int],
    eval_seeds: int,
    variant: Variant = Variant(),
    keep: Path | None = None,
    reevaluate: Path | None = None,
) -> Path:
    """Run `seeds` on `task` (or extend the final evaluation of the runs kept in `reevaluate`);
    its result file is rewritten after each, so a stop loses none. The run folders go to `keep`
    (to read what won afterwards), else a temporary directory.
    Refuses to mix rows of other budgets into the file: their numbers do not pool."""
    TASK_RESULTS.mkdir(parents=True, exist_ok=True)
    path = result_path(task, variant, eval_seeds)
    earlier = json.loads(path.read_text()) if path.exists() else {"seeds": []}
    conditions: dict[str, Any] = {
        "budgets": budgets(task, eval_seeds, variant),
        "machine": machine(),
    }
    mismatch = _budget_mismatch(earlier.get("budgets"), conditions["budgets"])
    if earlier["seeds"] and mismatch:
        raise SystemExit(
            f"{path} holds rows measured at other budgets ({mismatch}); measure at those "
            "budgets, or move the file away to start a row at these"
        )
    rows = [r for r in earlier["seeds"] if r["seed"] not in seeds]
    with nullcontext(keep) if keep else tempfile.TemporaryDirectory() as runs_dir:
        for seed in seeds:
            rows.append(
                reevaluate_seed(task, seed, eval_seeds, reevaluate)
                if reevaluate
                else run_seed(task, seed, eval_seeds, Path(runs_dir), variant)
            )
            print(json.dumps(rows[-1]), flush=True)
            record = {
                "task": task,
                **conditions,
                "seeds": sorted(rows, key=lambda r: r["seed"]),
            }
            path.write_text(json.dumps(record, indent=2) + "\n")  # after every seed: nothing lost
    return path


def _budget_mismatch(earlier: dict[str, Any] | None, now: dict[str, Any]) -> str:
    """What differs between a result file's budgets and this measurement's (keys both have)."""
    if earlier is None:
        return ""
    keys = (
        "rounds",
        "samples",
        "steps_per_candidate",
        "eval_seeds",
        "algo",
        "schedule",
        "finalists",
        "finalist_seeds",
    )
    return ", ".join(
        f"{k} {earlier[k]} there, {now[k]} here"
        for k in keys
        if k in earlier and earlier[k] != now[k]
    )


def _mean_sd(values: list[float]) -> str:
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.4g} ± {sd:.2g}"


def verdict(best: list[float], human: list[float]) -> tuple[str, bool, bool]:
    """(best - human, as text), beyond the noise, and at least as good within it: the rule a
    run's own final evaluation reports (`runs.versus_human`), on the pooled seeds."""
    comparison = versus_human(best, human)
    if comparison is None:
        return "-", False, False
    text = f"{comparison['difference']:+.3g} (2 SE {comparison['two_se']:.2g})"
    return text, comparison["verdict"] == "better", comparison["verdict"] != "worse"


def single_runs(rows: list[dict[str, Any]]) -> str:
    """What each run delivered on its own: how many of its runs ended better than the human
    reward beyond the noise, as good within it, and worse beyond it (a user runs once)."""
    verdicts = [r.get("versus_human") or _own_verdict(r) for r in rows]
    if not any(verdicts):
        return "-"
    counts = [sum(v == name for v in verdicts) for name in ("better", "as good", "worse")]
    return " / ".join(str(c) for c in counts)


def _own_verdict(row: dict[str, Any]) -> str | None:
    """A run's own verdict for rows measured before it was recorded; a best that is the human
    reward is as good by construction."""
    if row.get("best_is_human_reward"):
        return "as good"
    comparison = versus_human(row["best"], row["human"])
    return comparison["verdict"] if comparison else None


def distinct_trainings(rows: list[dict[str, Any]], arm: str) -> list[float]:
    """An arm's fitnesses, one per distinct training. Run seed s trains its evaluation seed i
    with seed `EVAL_SEED_BASE + s + i`, so run seeds 0 and 1 both train the human (and sparse)
    reward on one seed: identical numbers that, pooled twice, would shrink the noise. A best that
    is the human reward was trained as the human arm, so it shares those trainings too."""
    trainings = {
        ("fixed", r["seed"] + i)
        if arm != "best" or r.get("best_is_human_reward")
        else (r["seed"], i): v
        for r in rows
        for i, v in enumerate(r[arm])
    }
    return list(trainings.values())


def table() -> str:
    """The quality table from every task's result file, seeds pooled per task."""
    lines = [
        "| task | seeds | budget per candidate | best (fresh seeds) | human | sparse | "
        "human-normalised | best - human | beyond noise | as good | single runs better / as good "
        "/ worse | wall per seed | steps per seed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in sorted(TASK_RESULTS.glob("*.json")):
        record = json.loads(path.read_text())
        rows = record["seeds"]
        best, human, sparse = (distinct_trainings(rows, arm) for arm in ("best", "human", "sparse"))
        scores = [
            r["human_normalized_score"] for r in rows if r["human_normalized_score"] is not None
        ]
        diff, beyond, as_good = verdict(best, human)
        b = record["budgets"]
        backend = b.get("backend", "sb3")
        reduced = b.get("default_steps_per_candidate", b["steps_per_candidate"])
        tags = [
            t
            for t in (
                backend != "sb3" and backend,
                b.get("confirm_best") and "confirm-best",
                b.get("schedule", "full") != "full" and b["schedule"],
                b["steps_per_candidate"] < reduced and f"reduced budget, default {reduced:,}",
                b.get("finalists", 1) > 1
                and f"finals: {b['finalists']} x {b['finalist_seeds']} seeds",
                b["eval_seeds"] != DEFAULT_EVAL_SEEDS and f"{b['eval_seeds']} evaluation seeds",
            )
            if t
        ]
        name = record["task"] + (f" ({', '.join(tags)})" if tags else "")
        lines.append(
            f"| {name} | {', '.join(str(r['seed']) for r in rows)} | "
            f"{b['rounds']}x{b['samples']} x {b['steps_per_candidate']:,} {b['algo']}, "
            f"eval {b['eval_seeds']} seeds | {_mean_sd(best)} | {_mean_sd(human)} | "
            f"{_mean_sd(sparse)} | {_mean_sd(scores)} | {diff} | {'yes' if beyond else 'no'} | "
            f"{'yes' if as_good else 'no'} | {single_runs(rows)} | "
            f"{statistics.fmean(r['wall_s'] for r in rows) / 60:.1f} min | "
            f"{statistics.fmean(r['training_steps'] for r in rows):,.0f} |"
        )
    return "\n".join(lines) + "\n"


def write_table() -> None:
    """Write the table to results/quality.md and between its markers in docs/benchmarks.md."""
    text = table()
    (RESULTS / "quality.md").write_text(text)
    doc = DOC.read_text()
    if TABLE_START in doc and TABLE_END in doc:
        pattern = re.compile(re.escape(TABLE_START) + ".*?" + re.escape(TABLE_END), re.DOTALL)
        DOC.write_text(pattern.sub(lambda _: f"{TABLE_START}\n{text}{TABLE_END}", doc))
    print(text)


def main() -> None:
    """Measure one task if asked, then always reassemble the table from every result present."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task", help="a built-in task id, or an example task file's name")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument(
        "--eval-seeds", type=int, help="seeds per arm in the final evaluation (default: the task's)"
    )
    parser.add_argument(
        "--reevaluate",
        type=Path,
        help="extend the final evaluation of runs kept there (--keep-runs) to --eval-seeds, "
        "instead of running the loop: its seeds already trained are reused",
    )
    parser.add_argument(
        "--backend", default="sb3", choices=["sb3", "jax"], help="the learner (default sb3)"
    )
    parser.add_argument(
        "--keep-runs", type=Path, help="keep the run folders here (default: deleted afterwards)"
    )
    parser.add_argument(
        "--confirm-best",
        action="store_true",
        help="search with --confirm-best (a row of its own: `task (confirm-best)`)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        help="steps per candidate, search and evaluation (default: the task's own); for a task "
        "whose default budgets do not fit one sitting, recorded and shown in the table",
    )
    parser.add_argument(
        "--schedule", default="full", choices=["full", "halving"], help="the search's schedule"
    )
    parser.add_argument("--rounds", type=int, help="rounds (default: `rewardsmith run`'s)")
    parser.add_argument("--samples", type=int, help="candidates per round (default: `run`'s)")
    parser.add_argument(
        "--finalists",
        type=int,
        default=1,
        help="the selection rule: 1 (default) keeps the search's best on its one seed, as the "
        "table's first rows did; more plays the finals (a row of its own)",
    )
    parser.add_argument("--finalist-seeds", type=int, default=2, help="seeds per finalist")
    parser.add_argument("--table", action="store_true", help="assemble the table from the results")
    args = parser.parse_args()
    if not args.task and not args.table:
        parser.error("give --task TASK to measure one task, or --table to assemble the table")
    if args.task:
        variant = Variant(
            args.backend,
            args.confirm_best,
            args.steps,
            args.schedule,
            args.rounds,
            args.samples,
            args.finalists,
            args.finalist_seeds,
        )
        eval_seeds = args.eval_seeds or load_task(*task_ref(args.task)).training.eval_seeds
        path = measure(args.task, args.seeds, eval_seeds, variant, args.keep_runs, args.reevaluate)
        print(f"wrote {path}")
    write_table()


if __name__ == "__main__":
    main()
