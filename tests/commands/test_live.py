"""The live display hands over cleanly to what is printed after it."""

from __future__ import annotations

import io

from rich.console import Console

from rewardsmith.commands.live import LiveReporter
from rewardsmith.runs.candidate import CandidateKey


def test_output_after_the_live_display_starts_on_a_line_of_its_own_when_piped() -> None:
    """Piped to a file or `tee` (not a terminal), rich ends the last frame without a newline,
    and the run's summary table was printed on the frame's last line."""
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False)
    with LiveReporter(console) as reporter:
        reporter.round_started(0, 0)
        reporter.candidate(CandidateKey(0, 0), "trained", "fitness 1")
    console.print("the summary")
    lines = out.getvalue().splitlines()
    assert "the summary" in lines, lines[-3:]


def test_an_error_before_the_first_round_is_printed_alone_not_under_an_empty_table() -> None:
    """`rewardsmith run nosuchtask` printed an empty candidate table above its error."""
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False)
    with LiveReporter(console) as reporter:
        reporter.message("loading the task")
    console.print("error: unknown task 'nosuchtask'")
    assert "candidate" not in out.getvalue() and "round" not in out.getvalue()
    assert out.getvalue().splitlines()[-1] == "error: unknown task 'nosuchtask'"


def test_the_cli_says_an_unknown_task_alone() -> None:
    from typer.testing import CliRunner

    from rewardsmith.cli import app

    result = CliRunner().invoke(app, ["run", "nosuchtask", "--runs-dir", "/nonexistent/runs"])
    assert result.exit_code != 0 and "unknown task 'nosuchtask'" in result.output
    assert "candidate" not in result.output and "Traceback" not in result.output
