"""The `rewardsmith` command line: each command is a thin module under `rewardsmith.commands`."""

from __future__ import annotations

import typer

from rewardsmith.commands import (
    doctor,
    evaluate,
    export,
    feedback,
    inspect_cmd,
    judge,
    replay,
    report,
    run,
    runs_list,
    show,
    tasks,
    train,
    video,
)

app = typer.Typer(
    name="rewardsmith",
    help="Write reward functions with an LLM, train on them in a sandbox, and evolve them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
app.add_typer(tasks.app, name="tasks")
app.command("train")(train.train)
app.command("doctor")(doctor.doctor)
app.command("run")(run.run)
app.command("resume")(run.resume)
app.command("evaluate")(evaluate.evaluate)
app.command("runs")(runs_list.runs)
app.command("show")(show.show)
app.command("inspect")(inspect_cmd.inspect)
app.command("replay")(replay.replay)
app.command("report")(report.report)
app.command("export")(export.export)
app.command("video")(video.video)
app.command("judge")(judge.judge)
app.command("feedback")(feedback.feedback)

if __name__ == "__main__":
    app()
