"""`rewardsmith report RUN`: a self-contained HTML page with figures, plus the figures as PNGs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardsmith.commands.common import RunArgument, RunsDirOption, console, fail
from rewardsmith.commands.runs_list import load, run_errors
from rewardsmith.runs.layout import REPORT_DIR


def report(
    run: RunArgument,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Directory for report.html and the PNGs (default: RUN/report)."
        ),
    ] = None,
    runs_dir: RunsDirOption = Path("runs"),
) -> None:
    """Write an HTML report with figures and the best code, plus the figures as PNGs.

    Figures: best fitness per round against the human and sparse rewards, every candidate's
    fitness, the best reward's components over training, the final evaluation with error bars.
    """
    from rewardsmith.runs.report import write_report

    if out is not None and out.exists() and not out.is_dir():
        fail(f"{out} is a file, not a directory", "name a directory for --out (made if missing)")
    view = load(run, runs_dir)
    with run_errors():
        page, pngs = write_report(view, (out or view.path / REPORT_DIR).resolve())
    names = ", ".join(p.name for p in pngs)
    console.print(f"wrote [bold]{page}[/]" + (f" and {names}" if names else ""), highlight=False)
    console.print(f"open it in a browser: {page.as_uri()}", highlight=False, soft_wrap=True)
