"""`rewardsmith replay RUN`: step through a run's evolution; `--rerun` re-executes it, no LLM."""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from rewardsmith.commands.common import (
    JsonOption,
    RunArgument,
    RunsDirOption,
    console,
    fail,
    fmt,
    print_json,
)
from rewardsmith.commands.inspect_cmd import print_source
from rewardsmith.commands.runs_list import load, run_errors
from rewardsmith.commands.show import fate_text, print_header, print_reflection
from rewardsmith.commands.text import untrusted
from rewardsmith.runs.views import RoundView, RunView, sparkline

if TYPE_CHECKING:
    from rewardsmith.eureka_loop.replay_designer import PromptCheck
    from rewardsmith.eureka_loop.rerun import ReplayResult


def replay(
    run: RunArgument,
    rerun: Annotated[
        bool,
        typer.Option(
            "--rerun",
            help="Re-execute the whole run from its recorded LLM replies (no LLM is called) in a "
            "new run, check every prompt hashes the same, and compare the fitnesses.",
        ),
    ] = False,
    seed: Annotated[
        int | None, typer.Option(help="With --rerun: training seed (default: the run's).")
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(min=1, help="With --rerun: only re-execute the first ROUNDS rounds."),
    ] = None,
    evaluate: Annotated[
        bool | None,
        typer.Option(
            "--evaluate/--no-evaluate",
            help="With --rerun: run the final evaluation (default: as the run did).",
        ),
    ] = None,
    runs_dir: RunsDirOption = Path("runs"),
    as_json: JsonOption = False,
) -> None:
    """Step through a run round by round: verdicts, code diffs, fitness sparklines.

    Waits for Enter between rounds in a terminal; prints every round at once otherwise.
    """
    if rerun:
        _rerun(run, runs_dir, seed, rounds, evaluate, as_json)
        return
    if seed is not None or rounds is not None or evaluate is not None:
        fail("--seed, --rounds and --evaluate only apply with --rerun")
    view = load(run, runs_dir)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    print_header(view)
    if not view.rounds:
        console.print("\n[yellow]no round has started yet[/]")
    for i, round_view in enumerate(view.rounds):
        console.print()
        console.print(Rule(f"{round_view.label}  ({i + 1} of {len(view.rounds)})"))
        print_round(view, round_view)
        later = view.rounds[i + 1] if i + 1 < len(view.rounds) else None
        print_reflection(round_view, later, view.rounds[i - 1] if i else None)
        if interactive and later is not None:
            try:
                answer = console.input("[dim]Enter: next round, q: quit[/] ")
            except (EOFError, KeyboardInterrupt):
                answer = "q"
            if answer.strip().lower().startswith("q"):
                console.print()
                return


def print_round(view: RunView, round_view: RoundView) -> None:
    """Verdicts with fitness sparklines, best so far across rounds, and the round best's code."""
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column in ("candidate", "verdict", "fitness", "steps", "fitness over training"):
        table.add_column(column, justify="right" if column in ("fitness", "steps") else "left")
    for c in round_view.candidates:
        curve = sparkline(p.get("fitness") for p in c.checkpoints())
        steps = f"{c.steps:,}" if c.steps is not None else "-"
        table.add_row(c.key, fate_text(c), fmt(c.fitness), steps, Text(curve, style="green"))
    console.print(table)
    done = [
        r
        for r in view.rounds
        if r.finished and (r.round, r.attempt) <= (round_view.round, round_view.attempt)
    ]
    if round_view.finished:
        values = [r.best_fitness for r in done]
        console.print(
            Text.assemble(
                "best so far per round: ",
                (sparkline(values), "bold green"),
                f"  {' -> '.join(fmt(v) for v in values)}",
            )
        )
    round_best = next((c for c in round_view.candidates if c.is_round_best), None)
    if round_best is None:
        return
    code = round_best.code() or ""
    parent = view.parent_of(round_best)
    if parent is None:
        console.print(Rule(f"{round_best.key}, the round's best", style="dim", align="left"))
        print_source(code, "python")
        return
    diff = "".join(
        difflib.unified_diff(
            (parent.code() or "").splitlines(keepends=True),
            code.splitlines(keepends=True),
            f"{parent.key} (fitness {fmt(parent.fitness)})",
            f"{round_best.key} (fitness {fmt(round_best.fitness)})",
        )
    )
    console.print(
        Rule(f"{round_best.key}, the round's best, against {parent.key}", style="dim", align="left")
    )
    print_source(diff or "unchanged from its parent\n", "diff")


def _rerun(
    run: str,
    runs_dir: Path,
    seed: int | None,
    rounds: int | None,
    evaluate: bool | None,
    as_json: bool,
) -> None:
    from rewardsmith.commands.live import LiveReporter
    from rewardsmith.commands.signals import stop_on_signals
    from rewardsmith.eureka_loop.reporter import NullReporter
    from rewardsmith.eureka_loop.rerun import rerun

    with run_errors(), stop_on_signals():  # SIGTERM and SIGHUP stop it as Ctrl-C does
        if as_json:
            result = rerun(
                run, runs_dir, seed=seed, rounds=rounds, evaluate=evaluate, reporter=NullReporter()
            )
        else:
            with LiveReporter(console) as reporter:
                result = rerun(
                    run, runs_dir, seed=seed, rounds=rounds, evaluate=evaluate, reporter=reporter
                )
    if as_json:
        print_json(result.to_dict())
    else:
        print_replay_result(result)
    if not result.prompts_reproduced:
        raise typer.Exit(1)


def print_replay_result(result: ReplayResult) -> None:
    """Prompt hashes, per-candidate fates and fitnesses, the final evaluation, and a verdict."""
    console.print(
        f"\nrerun of [bold]{result.source.name}[/] is run [bold]{result.rerun.name}[/] "
        f"({result.rerun})",
        highlight=False,
    )
    _print_prompt_checks(result)
    if result.diverged:
        stopped = Text.assemble(
            ("the rerun stopped early:", "red"), " ", untrusted(result.diverged)
        )
        console.print(stopped, highlight=False)
    console.print(_candidates_table(result))
    pairs = (
        (
            "final evaluation, source -> rerun",
            {k: (fmt(a), fmt(b)) for k, (a, b) in result.evaluation.items()},
        ),
        (
            "versions that differ, source -> rerun",
            {k: (a or "-", b or "-") for k, (a, b) in result.versions.items()},
        ),
    )
    for title, changes in pairs:
        if changes:
            line = ", ".join(f"{name} {a} -> {b}" for name, (a, b) in changes.items())
            console.print(f"{title}: {line}", highlight=False)
    console.print(_verdict(result))


def _print_prompt_checks(result: ReplayResult) -> None:
    """All prompts the same, or each differing one (once per round) with its diff."""
    total, bad = len(result.prompts), result.prompt_mismatches
    if not bad:
        console.print(f"[green]prompts: all {total} hash the same as the recorded ones[/]")
        return
    console.print(f"[red]prompts: {len(bad)} of {total} differ from the recorded ones[/]")
    groups: dict[tuple[str | None, str], list[PromptCheck]] = {}
    for check in bad:  # the K candidates of a round share one prompt: report it once
        groups.setdefault((check.recorded_hash, check.replayed_hash), []).append(check)
    for checks in groups.values():
        keys = ", ".join(c.key for c in checks)
        console.print(untrusted(f"  {keys}: differs at {checks[0].where}"), highlight=False)
        for line in checks[0].diff:
            style = "red" if line.startswith("-") else "green" if line.startswith("+") else "dim"
            console.print(untrusted(f"    {line}", style))  # prompt text: reward errors


def _candidates_table(result: ReplayResult) -> Table:
    table = Table(title="Candidates: source run -> rerun", title_justify="left")
    for column in ("candidate", "source", "rerun", "fitness (source)", "fitness (rerun)", "same"):
        table.add_column(column, justify="right" if "fitness" in column else "left")
    for c in result.candidates:
        table.add_row(
            c.key,
            c.old_status or "-",
            c.new_status or "-",
            fmt(c.old_fitness),
            fmt(c.new_fitness),
            Text("yes", style="green") if c.same else Text("no", style="red"),
        )
    return table


def _verdict(result: ReplayResult) -> str:
    if result.reproduced:
        return "[bold green]reproduced:[/] same prompts, same fates, same fitnesses"
    if result.prompts_reproduced:
        return (
            "[bold yellow]prompts reproduced; fitnesses differ[/] (RL training is deterministic "
            "for a seed only on the same machine and library versions)"
        )
    return (
        "[bold red]not reproduced:[/] the prompts differ (see above): a template, the task "
        "description or the loop's feedback changed since the run was recorded"
    )
