"""The plan line a run prints before its first training: what it will train, in steps.
(tests/eureka_loop/test_fast_loop.py checks that a run prints it and trains what it says.)"""

from __future__ import annotations

from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.plan import plan_message, training_steps
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.jobs.training import make_job


def test_the_plan_counts_every_candidate_and_every_evaluation_arm() -> None:
    line = load_task("line")
    config = LoopConfig(task_id="line", rounds=2, samples=3, eval_seeds=2, steps=1000)
    assert training_steps(config, line) == (1000, (2 * 3 + 3 * 2) * 1000)
    assert plan_message(config, line) == (
        "plan: 2 rounds x 3 candidates x 1,000 steps, then best, human and sparse on 2 fresh "
        "seeds each: 12,000 training steps if every candidate trains, "
        f"{config.parallel} at a time"
    )
    no_evaluation = LoopConfig(
        task_id="line", rounds=1, samples=4, evaluate=False, schedule="halving", parallel=3
    )
    default_steps = make_job(line, steps=None, seed=0, search=True).steps
    assert plan_message(no_evaluation, line) == (
        f"plan: 1 round x 4 candidates x {default_steps:,} steps: {4 * default_steps:,} "
        "training steps if every candidate trains, 3 at a time (the halving schedule trains "
        "about half of the candidates' steps)"
    )


def test_the_final_evaluation_trains_the_task_s_seeds_unless_told_otherwise() -> None:
    """LunarLander's human reward lands on some seeds and crashes on others: two seeds per arm
    cannot tell a better reward from a lucky one there, so the task asks for more."""
    lander = load_task("lunarlander")
    assert lander.training.eval_seeds > load_task("line").training.eval_seeds == 2
    default = LoopConfig(task_id="lunarlander", rounds=1, samples=1)
    assert default.final_seeds(lander) == lander.training.eval_seeds
    assert f"on {lander.training.eval_seeds} fresh seeds each" in plan_message(default, lander)
    told = LoopConfig(task_id="lunarlander", rounds=1, samples=1, eval_seeds=1)
    assert told.final_seeds(lander) == 1
    steps, total = training_steps(told, lander)
    assert total == (1 + 3 * 1) * steps
