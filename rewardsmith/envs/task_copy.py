"""A run's own copy of its task file, with the reward files it names beside it.

A run must outlive the folder its task file came from: `evaluate`, `resume` and `replay --rerun`
load the task from the run folder. Reward paths in a task file are relative to it, so the copy
gets the reward files too, under fixed names, and names them in place of the originals.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

from rewardsmith.envs.toml_write import dumps
from rewardsmith.runs.layout import REWARD_COPIES, TASK_COPY


def copy_task(task_file: Path, dest_dir: Path) -> Path:
    """Copy `task_file` and its reward files into `dest_dir`; returns the copy's path.

    A task file without reward files is copied byte for byte. Otherwise the copy is written from
    the parsed file (comments are not kept) with each reward path replaced by its copy's name.
    """
    task_file = Path(task_file).resolve()
    dest = dest_dir / TASK_COPY
    data = tomllib.loads(task_file.read_text())
    named = [key for key in REWARD_COPIES if isinstance(data.get(key), str)]
    if not named:
        shutil.copyfile(task_file, dest)
        return dest
    for key in named:
        source = task_file.parent / data[key]
        if not source.is_file():
            raise FileNotFoundError(
                f"task file {task_file}: {key}: reward file {source} does not exist; "
                "paths are relative to the task file's folder"
            )
        shutil.copyfile(source, dest_dir / REWARD_COPIES[key])
        data[key] = REWARD_COPIES[key]
    header = (
        f"# Copied by rewardsmith from {task_file}, with its reward files beside it.\n"
        "# Reward paths are relative to this file.\n\n"
    )
    temp = dest.with_suffix(".toml.tmp")
    temp.write_text(header + dumps(data))
    os.replace(temp, dest)
    return dest
