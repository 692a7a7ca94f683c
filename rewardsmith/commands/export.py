"""`rewardsmith export RUN`: the best reward as a standalone file, with a provenance header."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from rewardsmith import __version__
from rewardsmith.commands.common import RunArgument, RunsDirOption, console, fail, fmt
from rewardsmith.commands.runs_list import load, run_errors
from rewardsmith.eureka_loop.baseline import is_env_reward
from rewardsmith.runs.layout import TASK_COPY
from rewardsmith.runs.views import CandidateView, RunView


def export(
    run: RunArgument,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="File to write (default: ./reward_<run id>.py); - for stdout."
        ),
    ] = None,
    candidate: Annotated[
        str | None,
        typer.Option("--candidate", "-c", help="Export this candidate (r01c02) instead."),
    ] = None,
    runs_dir: RunsDirOption = Path("runs"),
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
) -> None:
    """Write the run's best reward function as a standalone .py file with a provenance header."""
    view = load(run, runs_dir)
    with run_errors():
        chosen = view.candidate(candidate) if candidate else view.best
    if chosen is None:
        fail(f"run {view.run_id} has no trained candidate, so no best reward to export")
    code = chosen.code()
    if code is None:
        fail(f"{chosen.key} has no reward code: {chosen.fate}")
    if is_env_reward(code):
        fail(
            f"{chosen.key} is the environment's own reward (the task has no human reward file), "
            "so there is no reward function to export",
            "train on it with `rewardsmith train --task-file TASK --reward human`",
        )
    text = header(view, chosen, code) + code
    if out is not None and str(out) == "-":
        typer.echo(text, nl=False)
        return
    path = out or Path(f"reward_{view.run_id.replace('-', '_')}.py")
    if path.is_dir():
        path = path / f"reward_{view.run_id.replace('-', '_')}.py"
    if path.exists() and not force:
        fail(f"{path} exists", "pass --force to replace it, or choose another --out")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror}")
    console.print(f"wrote {chosen.key} of run {view.run_id} to [bold]{path}[/]", highlight=False)


def header(view: RunView, c: CandidateView, code: str) -> str:
    """Comment lines (so the code itself is unchanged) saying which run and candidate this is."""
    evaluation = view.evaluation or {}
    task_file = view.config.get("task_file")
    if task_file and (view.path / TASK_COPY).is_file():
        task_file = str(view.path / TASK_COPY)  # the run's own copy outlives the original
    task = f"--task-file {task_file}" if task_file else view.task
    final = evaluation.get("best") or {}
    lines = [
        f"Reward function found by RewardSmith {__version__}, exported "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.",
        "",
        f"task:       {view.task}",
        f"run:        {view.run_id} ({view.path})",
        f"candidate:  {c.key} (round {c.round}, candidate {c.idx}"
        + (f", evolved from {c.parent})" if c.parent else ")"),
        f"designer:   {view.designer}",
        f"fitness:    {fmt(c.fitness)} in the run (the task's own success measure)",
    ]
    if final.get("fitness") is not None:
        lines.append(
            f"evaluation: {fmt(final['fitness'])} +- {fmt(final.get('fitness_std'))} over "
            f"{len(final.get('per_seed', []))} fresh seed(s); human reward "
            f"{fmt(view.human_fitness)}, sparse {fmt(view.sparse_fitness)}, human-normalised "
            f"score {fmt(view.human_normalized_score, '.2f')}"
        )
    lines += [
        f"sha256:     {hashlib.sha256(code.encode()).hexdigest()} (of the code below this header)",
        "",
        "Contract: compute_reward(state, action, next_state) -> (total, components), over a",
        f"batch of N environments with named state fields; see `rewardsmith tasks show {task}`.",
        f"Train on it: rewardsmith train {task} --reward <this file>",
    ]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines) + "\n"
