"""`rewardsmith video RUN [TARGET]`: a rollout video of a run: where it is, a copy, or opened.

TARGET is a candidate key (`r00c01`), `evaluation/best|human|sparse` (the final evaluation's
first seed), or nothing (the run's best). A policy that was never filmed (a run with
`--videos none`, a candidate that was not its round's best) is filmed now, in the sandbox.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from rewardsmith.commands.common import JsonOption, RunArgument, RunsDirOption, console, fail
from rewardsmith.commands.text import plain


def video(
    run: RunArgument,
    target: Annotated[
        str | None,
        typer.Argument(
            help="A candidate key (r00c01), or evaluation/best, evaluation/human, "
            "evaluation/sparse (default: the run's best candidate)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Also copy the video to this file.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace --out if it exists.")] = False,
    open_it: Annotated[
        bool, typer.Option("--open", help="Open it with the system's video player.")
    ] = False,
    runs_dir: RunsDirOption = Path("runs"),
    as_json: JsonOption = False,
) -> None:
    """Print where a rollout video is (filming it first if it never was), copy it, or open it."""
    from rewardsmith.commands.common import print_json
    from rewardsmith.eureka_loop.film_run import film_target
    from rewardsmith.runs.schema import RunStoreError

    if out is not None and out.exists() and not force:
        fail(f"{out} exists", "pass --force to replace it, or choose another --out")
    try:
        filmed = film_target(runs_dir, run, target)
    except (RunStoreError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    if filmed.video is None:
        fail(f"no video of {filmed.label}: {filmed.reason}", "see `rewardsmith doctor`")
    path = filmed.video
    if out is not None:
        path = _copy(filmed.video, out)
    if as_json:
        print_json({"target": filmed.label, "video": str(filmed.video), "out": str(path)})
    else:
        console.print(plain(f"{filmed.label}: {path}"), highlight=False, soft_wrap=True)
    if open_it:
        typer.launch(str(path))


def _copy(src: Path, dest: Path) -> Path:
    """Copy through a temp file in the destination's folder, so a reader never sees half of it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return dest
