"""`rewardsmith evaluate`: retrain a run's best reward, the human and the sparse reward with fresh seeds."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from rewardsmith.choices import Backend, ExecutorChoice
from rewardsmith.commands.common import (
    AddressOption,
    JsonOption,
    RunsDirOption,
    console,
    fail,
    fmt,
    print_json,
    score_text,
)
from rewardsmith.commands.text import untrusted
from rewardsmith.runs.versus_human import versus_human_text

if TYPE_CHECKING:
    from rewardsmith.eureka_loop.evaluation import EvalKey
    from rewardsmith.runs.candidate import CandidateKey


def evaluate(
    run_id: Annotated[str, typer.Argument(help="Run id, unique prefix, or path.")],
    seeds: Annotated[
        int | None, typer.Option(min=1, help="Seeds per reward (default: the run's).")
    ] = None,
    runs_dir: RunsDirOption = Path("runs"),
    backend: Annotated[
        Backend | None,
        typer.Option(help="sb3 or jax (default: the run's own backend)."),
    ] = None,
    executor: Annotated[
        ExecutorChoice | None,
        typer.Option(help="local or ray (default: the run's own executor)."),
    ] = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """Report the human-normalised score of a run's best reward; seeds already trained are reused."""
    from rewardsmith.commands.signals import exit_code, stop_on_signals
    from rewardsmith.eureka_loop.reporter import NullReporter
    from rewardsmith.eureka_loop.runner import evaluate_run
    from rewardsmith.runs.schema import RunStoreError

    try:
        with stop_on_signals():  # SIGTERM and SIGHUP stop it as Ctrl-C does
            report = evaluate_run(
                run_id,
                runs_dir,
                seeds,
                NullReporter() if as_json else _Printer(),
                backend,
                (executor, address) if executor is not None else None,
            )
    except KeyboardInterrupt:
        console.print("\ninterrupted. Run it again to continue: seeds already trained are reused.")
        raise typer.Exit(exit_code()) from None
    except (RunStoreError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    if as_json:
        print_json(report)
        return
    table = Table(title=f"Evaluation of {report['run_id']} (best: {report['best_candidate']})")
    for column in ("reward", "fitness", "std", "per seed", "failed seeds"):
        table.add_column(column, justify="right")
    for name in ("best", "human", "sparse"):
        row = report[name]
        fitness = fmt(row["fitness"], missing="n/a")
        std = fmt(row["fitness_std"], ".3g", missing="n/a")
        table.add_row(
            name,
            fitness,
            std,
            ", ".join(f"{v:.4g}" for v in row["per_seed"]),
            str(row["failed_seeds"]),
        )
    console.print(table)
    if report.get("note"):
        console.print(f"{report['note']}: its seeds stand for the human arm too")
    score = score_text(
        report["human_normalized_score"],
        report["human"]["fitness"],
        report["sparse"]["fitness"],
        ".3f",
        missing="n/a",
    )
    console.print(f"[bold]human-normalised score:[/] {score}")
    comparison = versus_human_text(report.get("versus_human"))
    if comparison:
        console.print(comparison)


class _Printer:
    """A minimal reporter: one line per finished job."""

    def round_started(self, round: int, attempt: int) -> None:
        pass

    def candidate(self, key: CandidateKey | EvalKey, status: str, detail: str = "") -> None:
        if status in ("trained", "failed"):
            console.log(untrusted(f"{key.label} {status}" + (f": {detail}" if detail else "")))

    def progress(self, key: CandidateKey | EvalKey, done: int, total: int) -> None:
        pass

    def best(self, summary: dict[str, object]) -> None:
        pass

    def spend(self, tokens: int, usd: float) -> None:
        pass

    def message(self, text: str) -> None:
        console.log(untrusted(text))
