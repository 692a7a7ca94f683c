"""The task registry: string ids mapped to lazily imported adapter classes, like Gymnasium's."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from rewardsmith.envs.adapter import TaskAdapter


class TaskNotFoundError(LookupError):
    """An unknown task id; the message lists the known ones."""


@dataclass(frozen=True)
class TaskSpec:
    """How `load_task` finds a registered task without importing its module beforehand."""

    id: str
    entry_point: str  # "package.module:ClassName"
    listed: bool = True  # False: loadable by id, but not among the tasks `rewardsmith tasks` shows
    suite: str | None = None  # the extra of the optional suite it needs (`envs/suites.py`)


_REGISTRY: dict[str, TaskSpec] = {}


def register(
    task_id: str, entry_point: str, *, listed: bool = True, suite: str | None = None
) -> None:
    """Register a task; the module is only imported when the task is loaded. A task of an
    optional suite (`suite="robotics"`) is listed only where that suite is installed."""
    if ":" not in entry_point:
        raise ValueError(f"entry point {entry_point!r} must look like 'package.module:ClassName'")
    _REGISTRY[task_id] = TaskSpec(task_id, entry_point, listed, suite)


def _suite_missing(spec: TaskSpec) -> str | None:
    """The install line for a task whose suite is not installed, else None."""
    if spec.suite is None:
        return None
    from rewardsmith.envs.suites import SUITES

    suite = SUITES[spec.suite]
    return None if suite.installed() else suite.install_hint


def list_tasks() -> list[str]:
    """The built-in tasks that can run here (the tiny test task `line` aside)."""
    return sorted(
        task_id
        for task_id, spec in _REGISTRY.items()
        if spec.listed and _suite_missing(spec) is None
    )


def unavailable_tasks() -> dict[str, list[str]]:
    """Built-in tasks left out of `list_tasks` for want of their suite, by install line."""
    missing: dict[str, list[str]] = {}
    for task_id, spec in sorted(_REGISTRY.items()):
        hint = _suite_missing(spec)
        if spec.listed and hint is not None:
            missing.setdefault(hint, []).append(task_id)
    return missing


def load_task(task_id: str | None = None, task_file: Path | str | None = None) -> TaskAdapter:
    """The adapter for a registered id, or for a user task file (which wins when both are given)."""
    if task_file is not None:
        from rewardsmith.envs.task_file import load_task_file

        return load_task_file(Path(task_file))
    if task_id is None:
        raise TaskNotFoundError("name a task (see `rewardsmith tasks`) or pass --task-file")
    spec = _REGISTRY.get(task_id)
    if spec is None:
        known = ", ".join(list_tasks())
        raise TaskNotFoundError(
            f"unknown task {task_id!r}; known tasks: {known}. "
            "For another Gymnasium environment, write a task file and pass --task-file."
        )
    hint = _suite_missing(spec)
    if hint is not None:
        from rewardsmith.envs.suites import SuiteMissingError

        raise SuiteMissingError(f"task {task_id!r} needs a suite that is not installed: {hint}")
    module_name, _, attr = spec.entry_point.partition(":")
    adapter_class = getattr(importlib.import_module(module_name), attr)
    adapter: TaskAdapter = adapter_class()
    return adapter


for _task_id, _entry in {
    "cartpole": "rewardsmith.envs.tasks.classic:CartPole",
    "acrobot": "rewardsmith.envs.tasks.classic:Acrobot",
    "mountaincar-continuous": "rewardsmith.envs.tasks.classic:MountainCarContinuous",
    "pendulum": "rewardsmith.envs.tasks.classic:Pendulum",
    "lunarlander": "rewardsmith.envs.tasks.box2d:LunarLander",
    "halfcheetah": "rewardsmith.envs.tasks.mujoco:HalfCheetah",
    "hopper": "rewardsmith.envs.tasks.mujoco:Hopper",
    "walker2d": "rewardsmith.envs.tasks.mujoco:Walker2d",
    "ant": "rewardsmith.envs.tasks.mujoco:Ant",
    "humanoid": "rewardsmith.envs.tasks.mujoco:Humanoid",
}.items():
    register(_task_id, _entry)
# Gymnasium-Robotics (the `robotics` extra): goal-dictionary manipulation (envs/tasks/robotics.py).
for _task_id, _entry in {
    "fetch-reach": "rewardsmith.envs.tasks.robotics:FetchReach",
    "fetch-push": "rewardsmith.envs.tasks.robotics:FetchPush",
    "fetch-pick-and-place": "rewardsmith.envs.tasks.robotics:FetchPickAndPlace",
    "hand-block-rotate-z": "rewardsmith.envs.tasks.robotics:HandBlockRotateZ",
}.items():
    register(_task_id, _entry, suite="robotics")
# Meta-World (the `metaworld` extra, in an environment of its own): envs/tasks/metaworld.py.
for _task_id, _entry in {
    "metaworld-reach": "rewardsmith.envs.tasks.metaworld:Reach",
    "metaworld-button-press": "rewardsmith.envs.tasks.metaworld:ButtonPress",
    "metaworld-drawer-close": "rewardsmith.envs.tasks.metaworld:DrawerClose",
    "metaworld-door-close": "rewardsmith.envs.tasks.metaworld:DoorClose",
    "metaworld-door-unlock": "rewardsmith.envs.tasks.metaworld:DoorUnlock",
    "metaworld-drawer-open": "rewardsmith.envs.tasks.metaworld:DrawerOpen",
    "metaworld-handle-press": "rewardsmith.envs.tasks.metaworld:HandlePress",
    "metaworld-handle-press-side": "rewardsmith.envs.tasks.metaworld:HandlePressSide",
    "metaworld-window-close": "rewardsmith.envs.tasks.metaworld:WindowClose",
    "metaworld-window-open": "rewardsmith.envs.tasks.metaworld:WindowOpen",
    "metaworld-sweep-into": "rewardsmith.envs.tasks.metaworld:SweepInto",
    "metaworld-pick-place": "rewardsmith.envs.tasks.metaworld:PickPlace",
}.items():
    register(_task_id, _entry, suite="metaworld")
# A tiny deterministic task for fast tests and a quick check of an install (envs/tasks/line.py).
register("line", "rewardsmith.envs.tasks.line:Line", listed=False)
