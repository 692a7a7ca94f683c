"""`rewardsmith show RUN`: every round's candidates and their fates, the reflection fed forward, spend."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from rich.table import Table
from rich.text import Text

from rewardsmith.commands.common import JsonOption, console, print_json
from rewardsmith.commands.runs_list import RunArgument, RunsDirOption, fmt, load
from rewardsmith.runs.views import CandidateView, RoundView, RunView

STATUS_STYLES = {"trained": "green", "rejected": "red", "failed": "red", "designed": "yellow"}


def show(run: RunArgument, runs_dir: RunsDirOption = Path("runs"), as_json: JsonOption = False) -> None:
    """Show a run round by round: each candidate's fate, the reflection fed forward, tokens and cost."""
    view = load(run, runs_dir)
    if as_json:
        print_json(asdict(view))
        return
    print_header(view)
    if not view.rounds:
        console.print("\n[yellow]no round has started yet[/]")
    for i, round_view in enumerate(view.rounds):
        later = view.rounds[i + 1] if i + 1 < len(view.rounds) else None
        console.print()
        console.print(round_table(round_view))
        print_reflection(round_view, later)
    console.print(
        f"\nRead a candidate with [bold]rewardsmith inspect {view.run_id} --candidate KEY[/]"
        " (add --prompt, --response or --diff)."
    )


def print_header(view: RunView) -> None:
    """Run id, task, designer and state; the best candidate and the final evaluation; spend."""
    stop = f" ({view.stop_reason})" if view.stop_reason else ""
    console.print(
        Text.assemble(
            ("run ", "bold"), view.run_id, "  task ", (view.task, "bold"),
            "  designer ", (view.designer, "bold"), "  ", (view.status, "bold"), stop,
        )
    )
    config = view.config
    console.print(
        f"config: {config.get('rounds')} rounds x {config.get('samples')} samples, "
        f"{config.get('steps') or 'task default'} steps, seed {config.get('seed')}",
        highlight=False,
    )
    if error := view.info.get("error"):
        console.print(f"[red]error:[/] {error}", highlight=False)
    best = view.best
    if best is None:
        console.print("best: no candidate trained")
    else:
        console.print(f"[bold]best:[/] {best.key}, fitness {fmt(best.fitness)}", highlight=False)
    if view.evaluation is not None:
        final = (view.evaluation.get("best") or {}).get("fitness")
        console.print(
            f"final evaluation (fresh seeds): best {fmt(final)}, human {fmt(view.human_fitness)}, "
            f"sparse {fmt(view.sparse_fitness)}; human-normalised score "
            f"{fmt(view.human_normalized_score, '.2f')}",
            highlight=False,
        )
    console.print(
        f"LLM: {view.llm_calls} calls, {view.tokens:,} tokens, ${view.cost_usd:.4f}", highlight=False
    )


def round_table(round_view: RoundView) -> Table:
    """One round: candidates with fate, fitness and parent; the best so far in the caption."""
    spend = f"{round_view.llm_calls} LLM calls, {round_view.tokens:,} tokens, ${round_view.cost_usd:.4f}"
    prompt = f", prompt {round_view.prompt_hash[:12]}" if round_view.prompt_hash else ""
    table = Table(
        title=f"{round_view.label}: {spend}{prompt}", title_justify="left", title_style="bold"
    )
    table.add_column("candidate")
    table.add_column("fate", overflow="fold")
    table.add_column("fitness", justify="right")
    table.add_column("parent")
    for c in round_view.candidates:
        table.add_row(c.key, fate_text(c), fmt(c.fitness), c.parent or "-")
    if round_view.summary is None:
        table.caption = "selection has not run for this round (the run stopped or is still running)"
    else:
        s = round_view.summary
        best = f"best so far: {s.get('best') or '-'} ({fmt(s.get('best_fitness'))})"
        if not s.get("trained"):
            best = "no candidate trained; " + best
        table.caption = best
    table.caption_justify = "left"
    return table


def fate_text(c: CandidateView) -> Text:
    """The fate with its colour, and stars for the round's best and the run's best."""
    text = Text(c.fate, style=STATUS_STYLES.get(c.status, ""))
    if c.is_round_best:
        text.append("  ★ round best", style="bold")
    if c.is_best:
        text.append("  ★ run best", style="bold magenta")
    return text


def print_reflection(round_view: RoundView, later: RoundView | None) -> None:
    """The statistics and advice on the best so far that the next round's prompt carried."""
    reflection = round_view.reflection
    if reflection is None:
        return
    if later is None:
        where = "not fed forward: the run ended after this round"
    else:
        where = f"fed forward to {later.label}"
    console.print(
        f"reflection on {reflection.key} (fitness {fmt(reflection.fitness)}), {where}:",
        style="bold", highlight=False,
    )
    for line in reflection.lines:
        console.print(f"  {line}", highlight=False, soft_wrap=True)
    for advice in reflection.advice:
        console.print(f"  [cyan]advice:[/] {advice}", highlight=False)
