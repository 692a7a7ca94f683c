"""`rewardsmith runs`: list runs; plus the run argument and errors the viewing commands share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from rewardsmith.commands.common import JsonOption, RunsDirOption, console, fail, fmt, print_json
from rewardsmith.commands.text import plain

if TYPE_CHECKING:
    from rewardsmith.runs.views import RunView


@contextmanager
def run_errors() -> Iterator[None]:
    """A missing, partial, damaged or newer-schema run becomes one clear line, not a traceback."""
    from rewardsmith.runs.schema import RunStoreError
    from rewardsmith.runs.views import UnknownCandidateError

    try:
        yield
    except UnknownCandidateError as exc:  # the message lists the run's candidates
        fail(str(exc))
    except RunStoreError as exc:
        fail(str(exc), "list the runs with `rewardsmith runs --runs-dir DIR`")
    except (FileNotFoundError, NotADirectoryError, PermissionError, ValueError) as exc:
        fail(str(exc))


def load(run_ref: str, runs_dir: Path) -> RunView:
    """Open and read a run for a viewing command, failing with a clear message."""
    from rewardsmith.runs.views import open_view

    with run_errors():
        view = open_view(run_ref, runs_dir)
    return view


def runs(
    runs_dir: RunsDirOption = Path("runs"),
    task: Annotated[str | None, typer.Option("--task", help="Only runs of this task id.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List runs: task, designer, rounds, best fitness, human-normalised score, cost, state."""
    from rewardsmith.runs.store import RunStore

    summaries = RunStore(runs_dir).list_runs()
    if task is not None:
        summaries = [s for s in summaries if s.task == task]
    if as_json:
        print_json([asdict(s) for s in summaries])
        return
    if not summaries:
        console.print(f"no runs in {runs_dir}" + (f" for task {task!r}" if task else ""))
        return
    header = ("run", "task", "designer", "rounds", "best fitness", "human-norm.", "cost", "state")
    rows = [
        (
            s.run_id,
            s.task,
            s.model,
            str(s.rounds_done),
            fmt(s.best_fitness),
            fmt(s.human_normalized_score, ".2f"),
            f"${s.cost_usd or 0:.4f}",
            s.status,
        )
        for s in summaries
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    right = {3, 4, 5, 6}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            cell.rjust(w) if i in right else cell.ljust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    console.print(f"[bold]{line(header)}[/]", highlight=False, soft_wrap=True)
    styles = {"finished": "green", "running": "yellow", "interrupted": "yellow", "failed": "red"}
    for row, summary in zip(rows, summaries, strict=True):
        text = Text(plain(line(row)))
        text.stylize(styles[summary.status], len(text) - len(summary.status))
        console.print(text, highlight=False, soft_wrap=True)  # one line per run, even when piped
    console.print(
        "Look at one with [bold]rewardsmith show RUN[/] (a unique prefix of the id will do)."
    )
