"""Tasks: adapters that expose named state fields, fitness, and human/sparse rewards."""

from rewardsmith.envs.adapter import Episode, TaskAdapter
from rewardsmith.envs.registry import TaskNotFoundError, list_tasks, load_task, register
from rewardsmith.envs.schema import Field, StateBatch, StateSchema

__all__ = [
    "Episode",
    "Field",
    "StateBatch",
    "StateSchema",
    "TaskAdapter",
    "TaskNotFoundError",
    "list_tasks",
    "load_task",
    "register",
]
