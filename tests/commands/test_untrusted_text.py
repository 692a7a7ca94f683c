"""Text that came from reward code reaches the terminal as plain text, control characters visible.

A reward's error message, traceback, component names and output are hostile: Rich markup in them
crashed the CLI with `MarkupError`, and ANSI escapes passed through, so a failing reward could
clear the screen and print a fake "fitness 500" line. Each place the CLI prints such text is
driven here with a message carrying both.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner, Result

from rewardsmith.cli import app
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.store import RunStore

HOSTILE = "[bold red]fitness 500[/] [/oops] \x1b[2J\x1b[32mfitness 500\x9b31m\rX\x07\u202e"
VISIBLE = (
    "[bold red]fitness 500[/]",
    "[/oops]",
    "\\x1b[2J\\x1b[32mfitness 500",
    "\\x9b31m",
    "\\x0dX",
    "\\x07",
    "\\u202e",
)
RAW = ("\x1b", "\x9b", "\r", "\x07", "\u202e")
# The reward's source spells the message with escapes (a static check would not mind raw ones).
HOSTILE_SOURCE = (
    '"[bold red]fitness 500[/] [/oops] \\x1b[2J\\x1b[32mfitness 500\\x9b31m\\rX\\x07\\u202e"'
)
runner = CliRunner()
WIDE = {"COLUMNS": "400"}


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=WIDE)


def assert_plain(output: str) -> None:
    """Markup shown literally, every control character (but newline) escaped, none raw."""
    flat = output.replace("\n", "")
    for text in VISIBLE:
        assert text in flat, (text, output)
    for char in RAW:
        assert char not in output, (char, output)
    assert "MarkupError" not in output


def test_the_terminal_and_the_html_report_escape_with_one_helper() -> None:
    """One escaping for every place reward text is shown (issue 30: the report had none)."""
    from rewardsmith.commands import text
    from rewardsmith.runs import report
    from rewardsmith.untrusted_text import plain

    assert text.plain is plain and report.plain is plain
    assert report._e("<b>\u202e\x1b") == "&lt;b&gt;\\u202e\\x1b"


def test_untrusted_escapes_controls_and_is_never_markup() -> None:
    from rewardsmith.commands.text import plain, untrusted

    assert plain("a\tb\nc\x1b[0m\x00\x7f\x85\u2066") == "a\tb\nc\\x1b[0m\\x00\\x7f\\x85\\u2066"
    text = untrusted(HOSTILE)
    assert text.plain == plain(HOSTILE) and not text.spans
    out = io.StringIO()
    Console(file=out, width=400).print(untrusted(HOSTILE))
    assert_plain(out.getvalue())


def _failing_reward(tmp_path: Path, at_load: bool) -> Path:
    path = tmp_path / "reward.py"
    raise_line = f"raise ValueError({HOSTILE_SOURCE})\n"
    path.write_text(
        "import numpy as np\n\n"
        + (raise_line if at_load else "")
        + "\ndef compute_reward(state, action, next_state):\n"
        + ("    return np.zeros(len(action)), {}\n" if at_load else f"    {raise_line}")
    )
    return path


@pytest.mark.slow
@pytest.mark.parametrize("at_load", [False, True], ids=["in-the-call", "at-load"])
def test_train_prints_a_hostile_error_as_plain_text(tmp_path: Path, at_load: bool) -> None:
    reward = _failing_reward(tmp_path, at_load)
    result = invoke(
        "train", "cartpole", "--reward", reward, "--steps", "64", "--sandbox", "process",
        "--out", tmp_path / "job",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "error: runtime_error: " in result.output
    assert "ValueError: [bold red]fitness 500[/]" in result.output
    assert_plain(result.output)


@pytest.mark.slow
def test_train_names_an_odd_exception_class(tmp_path: Path) -> None:
    """A BaseException subclass is a runtime_error naming it, not "crashed: status 1"."""
    reward = tmp_path / "reward.py"
    reward.write_text(
        "import numpy as np\n\n\nclass Odd(BaseException):\n    pass\n\n\nraise Odd('odd')\n\n\n"
        "def compute_reward(state, action, next_state):\n"
        "    return np.zeros(len(action)), {}\n"
    )
    result = invoke(
        "train", "cartpole", "--reward", reward, "--steps", "64", "--sandbox", "process",
        "--out", tmp_path / "job",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "runtime_error: the reward module failed while loading: Odd: odd" in result.output


def _stored_run(tmp_path: Path) -> Path:
    """A run whose candidate failed with the hostile message, and whose code is hostile too."""
    config = {"rounds": 1, "samples": 1, "steps": 64, "seed": 0}
    with RunStore(tmp_path).create_run("cartpole", config, ["rewardsmith"], 0) as run:
        run.upsert_candidate(
            0, 0, status="failed", category="runtime_error", message=HOSTILE, parent=None
        )
        cand = run.candidate(CandidateKey(0, 0)).path
        cand.mkdir(parents=True, exist_ok=True)
        (cand / "reward.py").write_text(f"# {HOSTILE}\ndef compute_reward(s, a, n):\n    pass\n")
        (cand / "response.md").write_text(f"here it is: {HOSTILE}\n")
        run.set_status("failed", error=f"RuntimeError: {HOSTILE}")
        return run.path


def test_show_prints_a_stored_hostile_error_as_plain_text(tmp_path: Path) -> None:
    run_dir = _stored_run(tmp_path)
    result = invoke("show", run_dir.name, "--runs-dir", tmp_path)
    assert result.exit_code == 0, result.output
    assert "training failed (runtime_error:" in result.output
    assert_plain(result.output)


def test_inspect_and_replay_print_hostile_text_plainly(tmp_path: Path) -> None:
    run_dir = _stored_run(tmp_path)
    for args in (
        ("inspect", run_dir.name, "-c", "r00c00"),
        ("inspect", run_dir.name, "-c", "r00c00", "--response"),
        ("replay", run_dir.name),
        ("runs",),
    ):
        result = invoke(*args, "--runs-dir", tmp_path)
        assert result.exit_code == 0, (args, result.output)
        for char in RAW:
            assert char not in result.output, (args, char, result.output)
    result = invoke("inspect", run_dir.name, "-c", "r00c00", "--runs-dir", tmp_path)
    assert "# [bold red]fitness 500[/] [/oops] \\x1b[2J" in result.output


def test_live_views_print_hostile_details_plainly() -> None:
    from rewardsmith.commands.evaluate import _Printer
    from rewardsmith.commands.live import LiveReporter
    from rewardsmith.eureka_loop.evaluation import EvalKey

    out = io.StringIO()
    console = Console(file=out, width=400)
    reporter = LiveReporter(console)
    reporter.candidate(CandidateKey(0, 0), "failed", f"runtime_error: {HOSTILE}")
    reporter.message(HOSTILE)
    console.print(reporter.render())
    assert_plain(out.getvalue())

    import rewardsmith.commands.evaluate as evaluate

    out = io.StringIO()
    saved, evaluate.console = evaluate.console, Console(file=out, width=400)
    try:
        _Printer().candidate(EvalKey("best", 0), "failed", HOSTILE)
        _Printer().message(HOSTILE)
    finally:
        evaluate.console = saved
    assert_plain(out.getvalue())


def test_doctor_prints_a_hostile_probe_output_plainly() -> None:
    from rewardsmith.commands.doctor import _describe_live

    out = io.StringIO()
    Console(file=out, width=400).print(
        _describe_live({"ok": False, "start_s": 1, "error": HOSTILE})
    )
    assert_plain(out.getvalue())


def test_fail_prints_its_message_plainly() -> None:
    import rewardsmith.commands.common as common

    out = io.StringIO()
    saved, common.err_console = common.err_console, Console(file=out, width=400)
    try:
        with pytest.raises(typer.Exit):
            common.fail(HOSTILE, HOSTILE)
    finally:
        common.err_console = saved
    assert_plain(out.getvalue())
