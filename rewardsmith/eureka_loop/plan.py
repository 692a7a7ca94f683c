"""What a run will train, said before its first training: a MuJoCo task's default run trains
millions of steps, and a user on a laptop should learn that before waiting, not after."""

from __future__ import annotations

from rewardsmith.choices import Fitness, Schedule
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.jobs.training import make_job


def training_steps(config: LoopConfig, adapter: TaskAdapter) -> tuple[int, int]:
    """(steps per training, training steps of the whole run on the full schedule): every
    candidate and every arm of the final evaluation trains the same budget. Candidates the
    critic or the preference check rejects train nothing, and a best that is the human reward
    stands for the human arm, so a run usually trains less; a retried round, more."""
    steps = make_job(
        adapter,
        steps=config.steps,
        seed=config.seed,
        algo=config.algo,
        backend=config.backend,
        search=True,
    ).steps
    arms = 2 + (adapter.reward_source("sparse") is not None)  # best, human and sparse
    evaluation = arms * config.final_seeds(adapter) if config.evaluate else 0
    trainings = config.rounds * config.samples + finals_trainings(config) + evaluation
    return steps, trainings * steps


def finals_trainings(config: LoopConfig) -> int:
    """The finals' extra trainings at most (`eureka_loop/finals.py`): fewer where the run
    trained fewer distinct rewards than `--finalists`."""
    if config.finalists < 2 or config.fitness != Fitness.TASK:
        return 0
    return config.finalists * config.finalist_seeds


def plan_message(config: LoopConfig, adapter: TaskAdapter) -> str:
    """One line: rounds, candidates, budget, evaluation, and the steps it adds up to."""
    steps, total = training_steps(config, adapter)
    text = (
        f"plan: {_count(config.rounds, 'round')} x {_count(config.samples, 'candidate')}"
        f" x {steps:,} steps"
    )
    if finals := finals_trainings(config):
        text += (
            f", then up to the {config.finalists} fittest on {_count(config.finalist_seeds, 'more seed')}"
            f" each ({finals} trainings, to pick the best on more than one seed)"
        )
    if config.evaluate:
        seeds = _count(config.final_seeds(adapter), "fresh seed")
        arms = "best, human and sparse" if adapter.reward_source("sparse") else "best and human"
        text += f", then {arms} on {seeds} each"
    text += f": {total:,} training steps if every candidate trains, {config.parallel} at a time"
    if config.schedule == Schedule.HALVING:
        text += " (the halving schedule trains about half of the candidates' steps)"
    return text


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
