"""`rewardsmith tasks`: list the built-in tasks, or show one task's goal, fields and fitness."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from rewardsmith.commands.common import JsonOption, TaskFileOption, console, print_json, user_errors

app = typer.Typer(help="List tasks, or show one task's goal, state fields and fitness.")


@app.callback(invoke_without_command=True)
def list_all(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """List the built-in tasks."""
    if ctx.invoked_subcommand is not None:
        return
    from rewardsmith.envs import list_tasks, load_task
    from rewardsmith.envs.registry import unavailable_tasks
    from rewardsmith.rl.jax import backends_of

    described = [
        {**load_task(task_id).describe(), "backends": list(backends_of(task_id))}
        for task_id in list_tasks()
    ]
    if as_json:
        print_json(described)
        return
    table = Table(title="Built-in tasks")
    # Every task trains on sb3; the narrow "jax" column says which also have a JAX variant.
    for column in ("task", "environment", "jax", "fields", "fitness", "success"):
        table.add_column(column, no_wrap=column in ("task", "environment", "jax"))
    for task in described:
        table.add_row(
            task["id"],
            task["env_id"],
            "yes" if "jax" in task["backends"] else "-",
            str(len(task["fields"])),
            task["fitness"],
            task["success"] or "-",
        )
    console.print(table)
    for hint, ids in unavailable_tasks().items():
        console.print(
            f"Not installed here: {', '.join(ids)}: {hint}", highlight=False, markup=False
        )
    console.print(
        "Show one with [bold]rewardsmith tasks show TASK[/]; target any Gymnasium env with --task-file."
    )


@app.command("show")
def show(
    task: Annotated[str | None, typer.Argument(help="Task id, e.g. cartpole.")] = None,
    task_file: TaskFileOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a task's goal, state fields (with meanings and units), fitness and success."""
    from rewardsmith.envs import load_task

    with user_errors():
        described = load_task(task, task_file).describe()
    if as_json:
        print_json(described)
        return
    console.print(f"[bold]{described['id']}[/] ({described['env_id']})")
    console.print(described["goal"])
    table = Table(title="State fields (state.<name>, next_state.<name>)")
    for column in ("field", "shape", "units", "meaning"):
        table.add_column(column)
    for field in described["fields"]:
        table.add_row(field["name"], field["shape"], field["units"] or "-", field["description"])
    console.print(table)
    console.print(f"[bold]fitness:[/] {described['fitness']}")
    console.print(f"[bold]success:[/] {described['success'] or 'this task has no success flag'}")
    console.print(
        f"[bold]training default:[/] {described['default_algo']}, {described['default_steps']:,} "
        f"steps; a run's final evaluation trains each reward on "
        f"{described['default_eval_seeds']} fresh seeds"
    )
