"""`rewardsmith run` and `rewardsmith resume`: evolve reward functions for a task."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from rewardsmith.choices import Algo, Backend, ExecutorChoice
from rewardsmith.commands.common import (
    AddressOption,
    JsonOption,
    RunsDirOption,
    TaskFileOption,
    console,
    fail,
    fmt,
    print_json,
    user_errors,
)
from rewardsmith.commands.run_options import with_config_options
from rewardsmith.commands.text import untrusted
from rewardsmith.eureka_loop.config import LoopConfig
from rewardsmith.runs.loop_time import loop_time_text
from rewardsmith.runs.versus_human import held_up_text, undefined_score_text, versus_human_text


def _print_result(result: dict[str, Any]) -> None:
    table = Table(title=f"Run {result['run_id']} ({result['designer']})")
    for column in (
        "round",
        "trained",
        "rejected",
        "failed",
        "round best",
        "fitness",
        "best so far",
    ):
        table.add_column(column, justify="right")
    for h in result["history"]:
        fitness = fmt(h["round_best_fitness"])
        best = "-" if h["best_fitness"] is None else f"{h['best']} ({h['best_fitness']:.4g})"
        label = f"{h['round']}" + (f" retry {h['attempt']}" if h["attempt"] else "")
        table.add_row(
            label,
            str(h["trained"]),
            str(h["rejected"]),
            str(h["failed"]),
            h["round_best"] or "-",
            fitness,
            best,
        )
    console.print(table)
    console.print(f"stopped: {result['stop_reason']}")
    if result["best_reward_path"]:
        console.print(
            f"[bold]best reward:[/] {result['best_reward_path']} (fitness {_best_fitness(result)})"
        )
    if result["human_fitness"] is not None:
        console.print(
            f"final evaluation (fresh seeds): best {fmt(result['evaluated_best_fitness'], missing='n/a')}, "
            f"human {fmt(result['human_fitness'], missing='n/a')}, sparse {fmt(result['sparse_fitness'], missing='n/a')}"
        )
        if result.get("best_is_env_reward"):
            console.print(
                "the best is the environment's own reward (the task has no human reward file): "
                "no evolved reward beat it"
            )
        if result.get("evaluation_note"):
            console.print(f"{result['evaluation_note']}: its seeds stand for the human arm too")
        score = result["human_normalized_score"]
        console.print(
            f"[bold]human-normalised score:[/] {fmt(score, missing='n/a')} ({_score_meaning(result)})"
        )
        comparison = versus_human_text(result.get("versus_human"))
        if comparison:
            console.print(comparison)
        if shortfall := held_up_text(result.get("held_up")):
            console.print(shortfall)
    if result["llm_calls"]:
        console.print(
            f"LLM: {result['llm_calls']} calls, {result['tokens']:,} tokens, ${result['cost_usd']:.4f}"
        )
    preference = result.get("preference")
    if preference:
        console.print(
            f"preference check: {preference['checks']} checked, {preference['rejected']} rejected before training, "
            f"{preference['steps_saved']:,} training steps saved"
            + (
                f"; {preference['passed_unchecked']} passed because the bank could not discriminate"
                if preference["passed_unchecked"]
                else ""
            )
        )
    for suspect in result.get("reward_hacking_suspects") or []:
        reasons = f" {suspect['candidate']}: " + "; ".join(suspect["reasons"])
        console.print(Text.assemble((suspect["flag"], "bold yellow"), untrusted(reasons)))
    if timing := loop_time_text(result.get("loop_time")):
        console.print(timing, highlight=False)
    if videos := result.get("videos"):
        console.print(
            f"rollout videos: {len(videos)} (`rewardsmith show {result['run_id']}` lists them, "
            f"`rewardsmith report {result['run_id']}` plays them)",
            highlight=False,
        )


def _best_fitness(result: dict[str, Any]) -> str:
    """The best's fitness as selection saw it: over its finals seeds, with their spread, where
    it played the finals."""
    seeds, std = result.get("best_fitness_seeds"), result.get("best_fitness_std")
    text = fmt(result["best_fitness"])
    if isinstance(seeds, int) and seeds > 1 and isinstance(std, int | float):
        text += f" +- {std:.2g} over {seeds} training seeds"
    return text


def _score_meaning(result: dict[str, Any]) -> str:
    """Eureka's score, (best - sparse) / |human - sparse|, reads as intended only where the human
    reward beats the sparse one; otherwise say what it means and compare with human directly."""
    best, human, sparse = (
        result["evaluated_best_fitness"],
        result["human_fitness"],
        result["sparse_fitness"],
    )
    if undefined := undefined_score_text(human, sparse):
        return undefined
    if best is None or sparse is None or human >= sparse:
        return "1.0 = as good as the human reward, above 1 = better"
    return (
        f"the sparse reward beat the human reward here, so 0 = as good as sparse; "
        f"best - human = {best - human:+.4g}"
    )


def _execute(action: Any, as_json: bool, runs_dir: Path) -> None:
    from rewardsmith.commands.live import LiveReporter
    from rewardsmith.commands.signals import exit_code, stop_on_signals
    from rewardsmith.envs.registry import TaskNotFoundError
    from rewardsmith.eureka_loop.llm import LLMError
    from rewardsmith.eureka_loop.reporter import NullReporter
    from rewardsmith.runs.schema import RunStoreError

    reporter: Any = NullReporter() if as_json else LiveReporter(console)
    try:
        with stop_on_signals():  # SIGTERM and SIGHUP stop it as Ctrl-C does
            if as_json:
                result = action(reporter)
            else:
                with reporter:
                    result = action(reporter)
    except KeyboardInterrupt:
        console.print(
            f"\n[yellow]interrupted.[/] Continue with: rewardsmith resume RUN_ID --runs-dir {runs_dir} (see `rewardsmith runs`)"
        )
        raise typer.Exit(exit_code()) from None
    except (LLMError, RunStoreError, TaskNotFoundError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    except Exception as exc:  # an infrastructure failure: the run is kept and can be resumed
        fail(
            f"the run stopped on an unexpected {type(exc).__name__}: {exc}",
            f"everything so far is kept; fix the cause, then `rewardsmith resume RUN_ID --runs-dir {runs_dir}`",
        )
    if as_json:
        print_json(result)
    else:
        _print_result(result)


@with_config_options
def run(
    task: Annotated[str | None, typer.Argument(help="Task id (see `rewardsmith tasks`).")] = None,
    task_file: TaskFileOption = None,
    runs_dir: RunsDirOption = Path("runs"),
    as_json: JsonOption = False,
    **options: Any,
) -> None:
    """Evolve reward functions for a task: design, critique, train, analyze, select; then evaluate."""
    from rewardsmith.eureka_loop.runner import start_run

    if task is None and task_file is None:
        fail("name a task or pass --task-file", "see `rewardsmith tasks`")
    backend, algo = options["backend"], options["algo"]
    if backend != Backend.SB3:
        from rewardsmith.rl.jax import check_backend

        with user_errors():
            check_backend(backend, task or "", task_file is not None)
            if algo not in (None, Algo.PPO):
                raise ValueError(f"the {backend} backend trains with PPO only; drop --algo {algo}")
    try:
        config = LoopConfig(
            task_id=task or "",
            task_file=str(task_file.resolve()) if task_file else None,
            **options,
        )
    except ValueError as exc:  # options that do not go together: a usage error
        fail(str(exc), code=2)
    _execute(lambda reporter: start_run(config, runs_dir, reporter), as_json, runs_dir)


def resume(
    run_id: Annotated[str, typer.Argument(help="Run id, unique prefix, or path.")],
    runs_dir: RunsDirOption = Path("runs"),
    executor: Annotated[
        ExecutorChoice | None,
        typer.Option(help="Move the rest of the run: local or ray (default: the run's own)."),
    ] = None,
    address: AddressOption = None,
    as_json: JsonOption = False,
) -> None:
    """Continue an interrupted run from its last checkpoint, without repeating any LLM call."""
    from rewardsmith.eureka_loop.runner import resume_run

    placement = (executor, address) if executor is not None else None
    _execute(lambda reporter: resume_run(run_id, runs_dir, reporter, placement), as_json, runs_dir)
