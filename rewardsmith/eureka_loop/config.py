"""What the user asks a run for: one typed config, each option declared once with its help.

`rewardsmith run` builds its options from these fields (`commands/run_options.py`), so the flag,
its default, its help and the value the loop reads cannot drift apart; fields without a `cli`
entry are settings a caller may pass but the CLI does not offer. The config is stored in
run.json, so `resume` rebuilds the same loop.
"""

from __future__ import annotations

import os
from dataclasses import MISSING, asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardsmith.envs.adapter import TaskAdapter

from rewardsmith.choices import (
    Algo,
    Backend,
    ExecutorChoice,
    Fitness,
    Judge,
    SandboxChoice,
    Schedule,
    Videos,
)

# The preference check's bar: pairwise agreement of a candidate's discounted returns with fitness
# below which it is rejected untrained (lowered per task where the environment's own reward scores
# lower). Chosen from the measurements in docs/benchmarks.md (preference ablation).
DEFAULT_PREFERENCE_THRESHOLD = 0.8


def default_parallel() -> int:
    """Candidates trained at once unless told otherwise: one per CPU core (on 2 cores SB3 is
    fastest parallelised across candidates, not inside one)."""
    return os.cpu_count() or 1


SANDBOX_ENV = "REWARDSMITH_SANDBOX"
VIDEOS_ENV = "REWARDSMITH_VIDEOS"
FINALISTS_ENV = "REWARDSMITH_FINALISTS"
DEFAULT_FINALISTS = 3


def _from_env(name: str, kind: type[StrEnum], default: StrEnum) -> StrEnum | str:
    """`default` unless environment variable `name` says otherwise: a machine's standing choice.
    A wrong value is left for the option's own check to refuse with the allowed ones."""
    value = os.environ.get(name, default)
    return kind(value) if value in kind.__members__.values() else value


def default_sandbox() -> StrEnum | str:
    """`auto` unless REWARDSMITH_SANDBOX names another (a CI that pins the process backend, a
    host whose Docker is for something else)."""
    return _from_env(SANDBOX_ENV, SandboxChoice, SandboxChoice.AUTO)


def default_finalists() -> int:
    """3 unless REWARDSMITH_FINALISTS says otherwise (the test suite's tiny runs play no finals;
    the finals' tests ask by name). A value that is no whole number is refused here."""
    value = os.environ.get(FINALISTS_ENV, str(DEFAULT_FINALISTS))
    try:
        return int(value)
    except ValueError:
        raise ValueError(
            f"{FINALISTS_ENV}={value!r} is not a whole number; unset it or give one"
        ) from None


def default_videos() -> StrEnum | str:
    """`best` unless REWARDSMITH_VIDEOS names another (a machine that never renders)."""
    return _from_env(VIDEOS_ENV, Videos, Videos.BEST)


@dataclass(frozen=True)
class Cli:
    """How a config field appears on `rewardsmith run`: its help, and optionally its flag names
    (default `--field-name`), bounds and environment variable."""

    help: str
    flags: tuple[str, ...] = ()
    min: float | None = None
    max: float | None = None
    envvar: str | None = None


def option(default: Any = MISSING, *, factory: Any = MISSING, **cli: Any) -> Any:
    """A config field that is also a `run` option."""
    return field(default=default, default_factory=factory, metadata={"cli": Cli(**cli)})


@dataclass
class LoopConfig:
    """What the user asked for; stored in run.json so `resume` rebuilds the same loop."""

    task_id: str
    task_file: str | None = None
    model: str | None = option(
        None,
        envvar="REWARDSMITH_MODEL",
        help="litellm model, e.g. gpt-4o, anthropic/..., ollama/... Without one, the offline "
        "designer runs.",
    )
    api_base: str | None = option(
        None,
        envvar="REWARDSMITH_API_BASE",
        help="OpenAI-compatible server URL (vLLM, Ollama, ...).",
    )
    rounds: int = option(3, min=1, help="Evolution rounds.")
    samples: int = option(4, min=1, help="Candidates per round (K).")
    steps: int | None = option(
        None, min=1, help="Training steps per candidate (default: the task's)."
    )
    algo: Algo | None = option(None, help="The learner (default: the task's).")
    parallel: int = option(
        factory=default_parallel, min=1, help="Candidates trained at once (default: CPU cores)."
    )
    seed: int = option(0, help="Random seed.")
    max_usd: float | None = option(None, help="Stop once LLM spend reaches this many dollars.")
    max_tokens: int | None = option(None, help="Stop once LLM tokens reach this total.")
    feedback: str | None = option(
        None, help="Your own words for the designer, added to its prompts."
    )
    evaluate: bool = option(
        True,
        flags=("--evaluate/--no-evaluate",),
        help="Retrain best, human and sparse rewards at the end.",
    )
    eval_seeds: int | None = option(
        None,
        min=1,
        help="Seeds per reward in the final evaluation (default: the task's, 2 for most).",
    )
    critic_llm: bool = option(
        False,
        flags=("--critic-llm",),
        help="Also have the LLM review each candidate against the goal.",
    )
    round_retries: int = 2
    fitness_target: float | None = option(
        None, help="Stop early once the best fitness reaches this."
    )
    sandbox: SandboxChoice = option(
        factory=default_sandbox,
        envvar=SANDBOX_ENV,
        help="Where reward code runs: auto (Docker when its image is ready, else process), "
        "process, docker, or none (unconfined, resource limits only).",
    )
    backend: Backend = option(
        Backend.SB3,
        help="sb3 (Stable-Baselines3, CPU) or jax (JAX simulator and Brax PPO; needs the "
        "rewardsmith[jax] extra). `rewardsmith tasks` lists each task's backends.",
    )
    executor: ExecutorChoice = option(
        ExecutorChoice.LOCAL,
        help="Where candidates train: local (this machine) or ray (Ray tasks on a cluster; "
        "docs/cluster.md).",
    )
    address: str | None = option(
        None,
        help="The Ray cluster for --executor ray, as ray.init takes it: auto, HOST:PORT or "
        "ray://HOST:PORT (default: RAY_ADDRESS).",
    )
    train_timeout_s: float = 3600.0
    temperature: float = 1.0
    preference_check: bool = option(
        True,
        flags=("--preference-check/--no-preference-check",),
        help="Reject, before training, rewards that order recorded trajectories against the "
        "task's fitness.",
    )
    preference_threshold: float = option(
        DEFAULT_PREFERENCE_THRESHOLD,
        min=0.0,
        max=1.0,
        help="Agreement of a reward's returns with fitness on recorded trajectories below which "
        "it is rejected untrained (lowered per task where the environment's own reward scores "
        "lower).",
    )
    analyzer_llm: bool = option(
        False,
        flags=("--analyzer-llm",),
        help="Also have the LLM summarise failure causes and fixes for the next round.",
    )
    schedule: Schedule = option(
        Schedule.FULL,
        help="full: every candidate trains the whole budget. halving: all train a quarter of "
        "it, the fitter half continues from where it stopped, and so on (PPO on sb3): about "
        "half the training steps, at some risk of a weaker best (docs/benchmarks.md).",
    )
    confirm_best: bool = option(
        False,
        flags=("--confirm-best",),
        help="Train a would-be new best once more on a second seed; it takes over only if the "
        "mean of both still beats the incumbent (one more training per new best).",
    )
    finalists: int = option(
        factory=default_finalists,
        min=1,
        envvar=FINALISTS_ENV,
        help="After the last round, the run's fittest distinct rewards (this many, the best "
        "among them) train on --finalist-seeds more seeds each, and the best becomes the one "
        "with the highest mean minus one standard error, so one lucky seed does not pick the "
        "run's reward. 1 turns the finals off.",
    )
    finalist_seeds: int = option(
        2, min=0, help="Extra training seeds per finalist (0 turns the finals off)."
    )
    videos: Videos = option(
        factory=default_videos,
        envvar=VIDEOS_ENV,
        help="Rollout videos (rollout.mp4 beside each filmed candidate; `show` lists them, the "
        "report plays them). best: each round's best and the final evaluation's best, human and "
        "sparse policies. all: every trained candidate too. A machine that cannot render runs "
        "on without videos and says why once.",
    )
    judge: Judge = option(
        Judge.NONE,
        help="vlm: after each round's training, a vision-language model looks at stills of the "
        "top candidates' rollout videos (filmed even with --videos none) and says whether the "
        "policy pursues the goal or games the fitness; its verdict (judge.json) reaches the next "
        "prompt. human: after each round's training the run waits while you compare the round's "
        "videos in pairs on a page it serves on 127.0.0.1 (the address is printed); your "
        "feedback reaches the next prompt. Selection stays on fitness unless --fitness says "
        "otherwise.",
    )
    judge_model: str | None = option(
        None,
        help="litellm vision model for --judge vlm, e.g. gpt-4o (default: --model; through "
        "--api-base when given).",
    )
    judge_top: int = option(
        2, min=1, help="With --judge vlm: how many of each round's fittest candidates are judged."
    )
    judge_timeout_s: float | None = option(
        None,
        flags=("--judge-timeout",),
        min=1.0,
        help="With --judge human: seconds a round waits for your judgements before it goes on "
        "with the choices made so far (default: until you press done, or Ctrl-C once).",
    )
    fitness: Fitness = option(
        Fitness.TASK,
        help="What selection ranks by. task: the task's fitness. human (needs --judge human): "
        "the Bradley-Terry scores of your choices on the judging page, where the best so far "
        "is shown beside the new candidates as the anchor between rounds. blend: the mean of "
        "the two ranks, ties to the higher task fitness. A round without choices is selected "
        "on task fitness (docs/inspecting_runs.md).",
    )

    def __post_init__(self) -> None:
        """Plain strings (a recorded run.json, a caller) become the enums; a wrong one raises
        ValueError naming the allowed values."""
        for name, kind in CHOICES.items():
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                try:
                    setattr(self, name, kind(value))
                except ValueError:
                    allowed = ", ".join(member.value for member in kind)
                    raise ValueError(f"unknown {name} {value!r}; choose one of {allowed}") from None
        if self.fitness != Fitness.TASK and self.judge != Judge.HUMAN:
            raise ValueError(
                f"--fitness {self.fitness} ranks candidates by a person's choices, which only "
                "--judge human collects: add --judge human, or use --fitness task"
            )

    def final_seeds(self, adapter: TaskAdapter) -> int:
        """Seeds per reward in the final evaluation: the user's number, else the task's."""
        return self.eval_seeds or adapter.training.eval_seeds

    def to_dict(self) -> dict[str, Any]:
        """The config as run.json records it, so `resume` rebuilds the same loop."""
        return {k: str(v) if k in CHOICES and v is not None else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoopConfig:
        """A recorded config; keys this version does not know (a newer run's) are dropped."""
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def config_help(name: str) -> str:
    """The help of a config field's option, for commands that offer the same option."""
    cli: Cli = LoopConfig.__dataclass_fields__[name].metadata["cli"]
    return cli.help


CHOICES: dict[str, type[Any]] = {
    "algo": Algo,
    "sandbox": SandboxChoice,
    "backend": Backend,
    "executor": ExecutorChoice,
    "schedule": Schedule,
    "videos": Videos,
    "judge": Judge,
    "fitness": Fitness,
}
