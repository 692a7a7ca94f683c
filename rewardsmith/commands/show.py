"""`rewardsmith show RUN`: each round's candidates and fates, the reflection fed forward, spend."""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from rewardsmith.commands.common import (
    JsonOption,
    RunArgument,
    RunsDirOption,
    console,
    fmt,
    print_json,
    score_text,
)
from rewardsmith.commands.runs_list import load
from rewardsmith.commands.text import plain, untrusted
from rewardsmith.runs.layout import tensorboard_logs
from rewardsmith.runs.loop_time import loop_time_text
from rewardsmith.runs.versus_human import held_up_text, versus_human_text
from rewardsmith.runs.views import CandidateView, RoundView, RunView

STATUS_STYLES = {"trained": "green", "rejected": "red", "failed": "red", "designed": "yellow"}
TensorboardOption = Annotated[
    bool,
    typer.Option(
        "--tensorboard",
        help="Print the command that opens every training's curves in TensorBoard, and stop.",
    ),
]
NO_TENSORBOARD_LOGS = (
    "no TensorBoard logs in this run: the SB3 learner writes one per training where the "
    "tensorboard package is installed (pip install tensorboard); the JAX learner writes none"
)


def show(
    run: RunArgument,
    runs_dir: RunsDirOption = Path("runs"),
    as_json: JsonOption = False,
    tensorboard: TensorboardOption = False,
) -> None:
    """Show a run round by round: candidates' fates, the reflection fed forward, tokens, cost."""
    view = load(run, runs_dir)
    if tensorboard:
        print_tensorboard(view.path, as_json)
        return
    if as_json:
        print_json(asdict(view))
        return
    print_header(view)
    if not view.rounds:
        console.print("\n[yellow]no round has started yet[/]")
    for i, round_view in enumerate(view.rounds):
        later = view.rounds[i + 1] if i + 1 < len(view.rounds) else None
        console.print()
        print_round(round_view)
        print_reflection(round_view, later, view.rounds[i - 1] if i else None)
    console.print(
        f"\nRead a candidate with [bold]rewardsmith inspect {view.run_id} --candidate KEY[/]"
        " (add --prompt, --response or --diff)."
    )


def print_header(view: RunView) -> None:
    """Run id, task, designer and state; the best candidate and the final evaluation; spend."""
    stop = f" ({view.stop_reason})" if view.stop_reason else ""
    console.print(
        Text.assemble(
            ("run ", "bold"),
            view.run_id,
            "  task ",
            (view.task, "bold"),
            "  designer ",
            (view.designer, "bold"),
            "  ",
            (view.status, "bold"),
            stop,
        )
    )
    config = view.config
    console.print(
        f"config: {config.get('rounds')} rounds x {config.get('samples')} samples, "
        f"{config.get('steps') or 'task default'} steps, seed {config.get('seed')}, "
        f"schedule {config.get('schedule', 'full')}",
        highlight=False,
    )
    if error := view.info.get("error"):
        console.print(Text.assemble(("error:", "red"), " ", untrusted(error)), highlight=False)
    best = view.best
    if best is None:
        console.print("best: no candidate trained")
    else:
        console.print(f"[bold]best:[/] {best.key}, fitness {fmt(best.fitness)}", highlight=False)
    print_finals(view)
    if view.evaluation is not None:
        final = (view.evaluation.get("best") or {}).get("fitness")
        score = score_text(
            view.human_normalized_score, view.human_fitness, view.sparse_fitness, ".2f"
        )
        console.print(
            f"final evaluation (fresh seeds): best {fmt(final)}, human {fmt(view.human_fitness)}, "
            f"sparse {fmt(view.sparse_fitness)}; human-normalised score {score}",
            highlight=False,
        )
        comparison = versus_human_text(view.evaluation.get("versus_human"))
        if comparison:
            console.print(comparison, highlight=False)
        if shortfall := held_up_text(view.evaluation.get("held_up")):
            console.print(shortfall, style="yellow", highlight=False)
    console.print(
        f"LLM: {view.llm_calls} calls, {view.tokens:,} tokens, ${view.cost_usd:.4f}",
        highlight=False,
    )
    if timing := loop_time_text(view.loop_time):
        console.print(timing, highlight=False)
    print_videos(view)
    print_human_judgements(view)


def print_finals(view: RunView) -> None:
    """The finals: each finalist's mean and spread over its seeds, and which one won."""
    if text := view.finals_text():
        console.print(text, highlight=False, soft_wrap=True)


def print_human_judgements(view: RunView) -> None:
    """The human scores of each round a person judged (`rewardsmith judge`), best first."""
    from rewardsmith.commands.judge import print_round_scores
    from rewardsmith.runs.views import human_judgements

    for round_, judgements in human_judgements(view.path).items():
        print_round_scores(round_, judgements)


def print_videos(view: RunView) -> None:
    """Where each rollout video is: watching the behaviour is the first check of a reward."""
    if not view.videos:
        return
    console.print("[bold]rollout videos:[/]")
    for label, path in view.videos:
        console.print(f"  {label}: {path}", highlight=False, soft_wrap=True)


def print_tensorboard(run_dir: Path, as_json: bool) -> None:
    """The command that opens the run's training curves: SB3's own (losses, the shaped reward's
    episode return) and each checkpoint's fitness and reward components, one curve per training."""
    logs = tensorboard_logs(run_dir)
    program = tensorboard_program()
    command = f"{program or 'tensorboard'} --logdir {shlex.quote(str(run_dir))}" if logs else None
    if as_json:
        note = None if logs else NO_TENSORBOARD_LOGS
        print_json({"command": command, "logs": [str(log) for log in logs], "note": note})
        return
    if command is None:
        console.print(NO_TENSORBOARD_LOGS, style="yellow", highlight=False)
        return
    console.print(f"{len(logs)} training log(s); open them with:", highlight=False)
    console.print(f"  {command}", highlight=False, soft_wrap=True)
    if program is None:
        console.print("(the tensorboard command is not installed: pip install tensorboard)")


def tensorboard_program() -> str | None:
    """`tensorboard` where it is on PATH; its full path where it sits beside this interpreter
    (a virtualenv used without activating it, as the README does); None where it is neither."""
    if shutil.which("tensorboard"):
        return "tensorboard"
    beside = shutil.which("tensorboard", path=str(Path(sys.executable).parent))
    return shlex.quote(beside) if beside else None


def print_round(round_view: RoundView) -> None:
    """One round: a heading with its spend, a table of candidates, and the best so far."""
    r = round_view
    heading = Text(r.label, style="bold")
    if r.llm_calls:
        heading.append(f"  {r.llm_calls} LLM calls, {r.tokens:,} tokens, ${r.cost_usd:.4f}")
    if r.prompt_hash:
        heading.append(f"  prompt {r.prompt_hash[:12]}", style="dim")
    console.print(heading, soft_wrap=True)
    table = Table()
    table.add_column("candidate")
    table.add_column("fate", overflow="fold")
    table.add_column("fitness", justify="right")
    table.add_column("steps", justify="right")
    table.add_column("parent")
    for c in r.candidates:
        steps = f"{c.steps:,}" if c.steps is not None else "-"
        table.add_row(c.key, fate_text(c), fmt(c.fitness), steps, c.parent or "-")
    console.print(table)
    for c in r.candidates:  # below the table: a verdict is a sentence, too long for a cell
        if verdict := c.judge_verdict():
            console.print(
                untrusted(f"{c.key} {verdict}", "magenta"), highlight=False, soft_wrap=True
            )
    if r.summary is None:
        console.print("selection has not run for this round (the run stopped or is still running)")
        return
    best = f"best so far: {r.summary.get('best') or '-'} ({fmt(r.summary.get('best_fitness'))})"
    if r.summary.get("selected_on") not in (None, "task"):
        best += f", selected on {r.summary['selected_on']} scores"
    console.print(best if r.summary.get("trained") else f"no candidate trained; {best}")
    if r.summary.get("selection_note"):
        console.print(untrusted(str(r.summary["selection_note"]), "yellow"), highlight=False)
    if r.summary.get("judge_note"):
        console.print(untrusted(str(r.summary["judge_note"]), "yellow"), highlight=False)


def fate_text(c: CandidateView) -> Text:
    """The fate with its colour, and stars for the round's best and the run's best.

    The fate carries the reward's own error message: plain text (see `text.py`).
    """
    text = untrusted(c.fate, STATUS_STYLES.get(c.status, ""))
    for reason in c.hacking_reasons():
        text.append(plain(f"  likely reward hacking: {reason}"), style="bold yellow")
    if c.is_round_best:
        text.append("  ★ round best", style="bold")
    if c.is_best:
        text.append("  ★ run best", style="bold magenta")
    return text


def print_reflection(
    round_view: RoundView, later: RoundView | None, earlier: RoundView | None = None
) -> None:
    """The analysis of the best so far that the next round's prompt carried (once per best)."""
    reflection = round_view.reflection
    if reflection is None:
        return
    if later is None:
        where = "not fed forward: the run ended after this round"
    else:
        where = f"fed forward to {later.label}"
    title = f"reflection on {reflection.key} (fitness {fmt(reflection.fitness)}), {where}"
    if earlier is not None and earlier.reflection and earlier.reflection.key == reflection.key:
        console.print(f"{title}: the same as after {earlier.label}", style="bold", highlight=False)
        return
    console.print(f"{title}:", style="bold", highlight=False)
    for line in reflection.without_code().splitlines():
        console.print(untrusted(f"  {line}"), highlight=False, soft_wrap=True)
