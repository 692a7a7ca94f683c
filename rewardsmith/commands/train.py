"""`rewardsmith train`: train one reward (a file, or the task's human or sparse reward) and score it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from rewardsmith.choices import Backend, SandboxChoice
from rewardsmith.commands.common import (
    AlgoOption,
    BackendOption,
    JsonOption,
    SandboxOption,
    TaskFileOption,
    console,
    fail,
    print_json,
    user_errors,
)
from rewardsmith.commands.signals import exit_code, stop_on_signals
from rewardsmith.commands.text import untrusted
from rewardsmith.runs.layout import EVAL_DIR, JOB_DIR, WORKER_LOG


def resolve_reward(adapter: Any, reward: str) -> tuple[str | None, str]:
    """The reward source for `human`, `sparse` or a file path, with a label for the output."""
    if reward in ("human", "sparse"):
        source = adapter.reward_source(reward)
        if source is None and reward == "sparse":
            raise ValueError(
                f"task {adapter.id!r} defines no sparse reward; add `sparse_reward` to its task file"
            )
        return source, f"{reward} reward" + (
            "" if source is not None else " (the environment's own)"
        )
    path = Path(reward)
    if not path.is_file():
        raise FileNotFoundError(
            f"reward file {reward} does not exist; pass human, sparse, or a path to a .py file"
        )
    return path.read_text(), str(path)


def checkpoint_table(checkpoints: list[dict[str, Any]]) -> Table:
    """The reflection log as a table, one column per reward component any checkpoint named
    (nan where a checkpoint lacks it); component names are the reward's, shown as plain text."""
    names = sorted({name for c in checkpoints for name in c.get("components", {})})
    table = Table(title="Checkpoints (evaluation episodes; components are per-episode sums)")
    for column in ("step", "fitness", "success", "length", "reward"):
        table.add_column(column, justify="right")
    for name in names:  # the reward's own component names: plain text
        table.add_column(untrusted(name), justify="right")
    for c in checkpoints:
        success = "-" if c.get("success_rate") is None else f"{c['success_rate']:.0%}"
        row = [
            f"{c['step']:,}",
            f"{c['fitness']:.3g}",
            success,
            f"{c['episode_length']:.0f}",
            f"{c.get('reward_return', 0):.3g}",
        ]
        row += [f"{c.get('components', {}).get(name, float('nan')):.3g}" for name in names]
        table.add_row(*row)
    return table


def train(
    task: Annotated[str | None, typer.Argument(help="Task id (see `rewardsmith tasks`).")] = None,
    reward: Annotated[
        str, typer.Option("--reward", "-r", help="human, sparse, or a reward .py file.")
    ] = "human",
    steps: Annotated[
        int | None, typer.Option(help="Training steps (default: the task's tuned budget).", min=1)
    ] = None,
    seed: Annotated[int, typer.Option(help="Random seed.")] = 0,
    algo: AlgoOption = None,
    out: Annotated[
        Path | None, typer.Option(help="Where to keep the job (default: runs/train/<task>-<time>).")
    ] = None,
    sandbox: SandboxOption = SandboxChoice.AUTO,
    timeout: Annotated[
        float, typer.Option(help="Wall-clock limit for training, in seconds.")
    ] = 3600.0,
    task_file: TaskFileOption = None,
    backend: BackendOption = Backend.SB3,
    as_json: JsonOption = False,
) -> None:
    """Train a policy on one reward in the sandbox and report its fitness."""
    from rewardsmith.envs import load_task
    from rewardsmith.jobs.training import make_job, train_reward
    from rewardsmith.reward.static import check_source
    from rewardsmith.runs.store import claim_fresh_dir
    from rewardsmith.sandbox.backends import choose_sandbox
    from rewardsmith.sandbox.types import Limits

    with user_errors():
        adapter = load_task(task, task_file)
        source, label = resolve_reward(adapter, reward)
        if source is not None:
            check_source(source)  # static errors are reported before any sandbox starts
        run_id = f"train-{adapter.id}-{time.strftime('%Y%m%d-%H%M%S')}"
        chosen = choose_sandbox(sandbox, run_id=run_id)
    if chosen.sandbox.name == "docker":
        from rewardsmith.sandbox.docker_backend import sweep_message

        if (swept := sweep_message()) and not as_json:
            console.print(untrusted(swept), highlight=False)
    with user_errors():
        job = make_job(adapter, steps=steps, seed=seed, algo=algo, backend=backend)
    if out is None:
        out = claim_fresh_dir(
            Path("runs") / "train", f"{adapter.id}-{time.strftime('%Y%m%d-%H%M%S')}"
        )
    elif any((out / name).exists() for name in (JOB_DIR, EVAL_DIR)):
        fail(
            f"{out} already holds a training job",
            "pass a new --out folder, or leave it out to get one under runs/train/",
        )
    out = out.resolve()
    if not as_json:
        console.print(
            Text.assemble(
                "Training ",
                untrusted(adapter.id, "bold"),
                untrusted(
                    f" on {label}: {job.algo.upper()}"
                    + (" (Brax, jax backend)" if job.backend == "jax" else "")
                    + f", {job.steps:,} steps, seed {seed}, "
                    f"sandbox: {chosen.describe()}"
                ),
            )
        )
    progress = Progress(
        TextColumn("[bold]training"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=as_json,
        transient=False,
    )
    try:
        with stop_on_signals(), progress:  # SIGTERM and SIGHUP stop it as Ctrl-C does
            bar = progress.add_task("train", total=job.steps)
            outcome = train_reward(
                adapter,
                job,
                source,
                out,
                chosen.sandbox,
                Limits(wall_s=timeout),
                on_progress=lambda done, total: progress.update(bar, completed=min(done, total)),
            )
    except KeyboardInterrupt:
        console.print(untrusted(f"\ninterrupted; the sandbox was stopped. The job so far: {out}"))
        raise typer.Exit(exit_code()) from None
    result = {"task": adapter.id, "reward": label, **outcome.to_dict(), "candidate_dir": str(out)}
    if as_json:
        print_json(result)
        raise typer.Exit(0 if outcome.ok else 1)
    if outcome.checkpoints:
        console.print(checkpoint_table(outcome.checkpoints))
    if outcome.error is not None:
        fail(
            str(outcome.error),
            f"worker log: {out / WORKER_LOG}"
            + (f"\n{outcome.error.traceback}" if outcome.error.traceback else ""),
        )
    success = "" if outcome.success_rate is None else f", success rate {outcome.success_rate:.0%}"
    console.print(
        f"[bold green]fitness {outcome.fitness:.4g}[/]{success} ({adapter.fitness_description}); files in {out}"
    )
