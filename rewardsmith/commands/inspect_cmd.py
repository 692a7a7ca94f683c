"""`rewardsmith inspect RUN`: a candidate's reward code, exact prompt, raw reply and diff."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated

import typer
from rich.rule import Rule
from rich.syntax import Syntax
from rich.text import Text

from rewardsmith.commands.common import RunArgument, RunsDirOption, console, fail, fmt
from rewardsmith.commands.runs_list import load, run_errors
from rewardsmith.commands.text import plain, untrusted
from rewardsmith.runs.layout import REWARD
from rewardsmith.runs.views import CandidateView, RunView


def inspect(
    run: RunArgument,
    round: Annotated[
        int | None, typer.Option("--round", "-r", min=0, help="Round (0-based, as in r01c02).")
    ] = None,
    candidate: Annotated[
        str | None,
        typer.Option("--candidate", "-c", help="Candidate key (r01c02), or an index with --round."),
    ] = None,
    prompt: Annotated[bool, typer.Option("--prompt", help="Show the exact prompt sent.")] = False,
    response: Annotated[bool, typer.Option("--response", help="Show the raw reply.")] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Diff the code against the candidate it evolved from.")
    ] = False,
    runs_dir: RunsDirOption = Path("runs"),
) -> None:
    """Show a candidate's reward code (default: the run's best), prompt, raw reply or diff."""
    view = load(run, runs_dir)
    chosen = pick(view, round, candidate)
    console.print(
        Text.assemble(
            (chosen.key, "bold"),
            untrusted(
                f" of run {view.run_id}: {chosen.fate}"
                + (f", fitness {fmt(chosen.fitness)}" if chosen.fitness is not None else "")
                + (" (the run's best)" if chosen.is_best else "")
            ),
        ),
        highlight=False,
    )
    if (video := chosen.files.video()) is not None:
        console.print(plain(f"rollout video: {video}"), highlight=False, soft_wrap=True)
    if prompt:
        print_prompt(chosen)
    if response:
        print_response(chosen)
    if diff:
        print_diff(view, chosen)
    if not (prompt or response or diff):
        print_code(chosen)


def pick(view: RunView, round: int | None, candidate: str | None) -> CandidateView:
    """The candidate asked for; by default the run's best, or the best of `round`."""
    with run_errors():
        if candidate is not None:
            return view.candidate(candidate, round)
        if round is not None:
            members = [c for c in view.candidates if c.round == round]
            if not members:
                fail(f"run {view.run_id} has no round {round}", f"it has {len(view.rounds)}")
            trained = [c for c in members if c.fitness is not None]
            return max(trained, key=lambda c: c.fitness or 0.0) if trained else members[0]
    if view.best is not None:
        return view.best
    if not view.candidates:
        fail(f"run {view.run_id} has no candidates yet")
    fail(
        f"run {view.run_id} has no trained candidate, so no best",
        "pick one with --candidate KEY (see `rewardsmith show`)",
    )


def print_code(c: CandidateView) -> None:
    """The candidate's reward code; one that has none (no code in the reply) fails with its fate."""
    code = c.code()
    if code is None:
        fail(f"{c.key} has no reward code: {c.fate}", "its raw reply: add --response")
    console.print(Rule(f"{c.path / REWARD}", style="dim"))
    print_source(code, "python")


def print_prompt(c: CandidateView) -> None:
    """Each message of the prompt exactly as sent, under its role; control characters escaped."""
    recorded = c.prompt()
    if recorded is None:
        fail(f"{c.key} has no recorded prompt (prompt.json is missing)")
    console.print(Rule(f"prompt {recorded.get('prompt_hash', '?')}", style="dim"))
    for message in recorded.get("messages", []):
        console.print(Rule(str(message.get("role", "?")), style="cyan", align="left"))
        console.out(plain(message.get("content", "")), highlight=False)


def print_response(c: CandidateView) -> None:
    """The designer's reply before any code was extracted: to see why extraction failed."""
    reply = c.response()
    if reply is None:
        fail(f"{c.key} has no recorded reply (response.md is missing)")
    console.print(Rule("raw reply", style="dim"))
    console.out(plain(reply), highlight=False)


def print_diff(view: RunView, c: CandidateView) -> None:
    """A unified diff of the code against the candidate it evolved from; one designed from the
    task description alone gets a note instead, a parent missing from the run is an error."""
    parent = view.parent_of(c)
    if parent is None:
        if c.parent:
            fail(f"{c.key} names parent {c.parent}, which this run does not have")
        console.print(f"{c.key} has no parent: round {c.round} started from the task description")
        return
    before, after = parent.code() or "", c.code()
    if after is None:
        fail(f"{c.key} has no reward code to diff: {c.fate}", "its raw reply: add --response")
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        f"{parent.key}/reward.py (fitness {fmt(parent.fitness)})",
        f"{c.key}/reward.py",
    )
    text = "".join(lines)
    console.print(Rule(f"{parent.key} -> {c.key}", style="dim"))
    if not text:
        console.print("the code is unchanged from its parent")
        return
    print_source(text, "diff")


def print_source(text: str, lexer: str) -> None:
    """Highlighted with line numbers in a terminal; as is when piped, so it can be saved.

    Either way control characters are shown escaped (the code is the LLM's); Syntax does not
    parse markup. `rewardsmith export` writes the code byte for byte.
    """
    text = plain(text)
    if console.is_terminal:
        console.print(Syntax(text, lexer, line_numbers=lexer == "python", word_wrap=True))
    else:
        console.out(text, highlight=False, end="" if text.endswith("\n") else "\n")
