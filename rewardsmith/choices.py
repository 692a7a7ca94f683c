"""The closed sets of values options take, one enum each, so a wrong value is refused with the
list of allowed ones (Typer shows an enum's members as the choices).

They are `StrEnum`s: a member is its string, so records written before the enums existed, and
code that compares with plain strings, read the same.
"""

from __future__ import annotations

from enum import StrEnum


class Schedule(StrEnum):
    """How a round's candidates share the training budget."""

    FULL = "full"
    HALVING = "halving"


class Algo(StrEnum):
    """The SB3 learner."""

    PPO = "ppo"
    SAC = "sac"


class SandboxChoice(StrEnum):
    """Where reward code runs (`auto`: Docker when ready, else the process backend)."""

    AUTO = "auto"
    PROCESS = "process"
    DOCKER = "docker"
    NONE = "none"


class Backend(StrEnum):
    """The simulator and learner stack."""

    SB3 = "sb3"
    JAX = "jax"


class ExecutorChoice(StrEnum):
    """Where candidates train: this machine, or Ray tasks on a cluster."""

    LOCAL = "local"
    RAY = "ray"


class Videos(StrEnum):
    """Which trained policies get a rollout video (an MP4 beside the candidate's files)."""

    NONE = "none"
    BEST = "best"
    ALL = "all"


class Judge(StrEnum):
    """Who watches the trained policies: nobody, a vision-language model shown stills of the
    rollout video (`--judge-model`), or a person on the judging page while the run waits."""

    NONE = "none"
    VLM = "vlm"
    HUMAN = "human"


class Fitness(StrEnum):
    """What selection ranks a round's candidates by (`eureka_loop/selection_rule.py`): the task's
    reward-free fitness, a person's choices on the judging page (Bradley-Terry scores), or both."""

    TASK = "task"
    HUMAN = "human"
    BLEND = "blend"
