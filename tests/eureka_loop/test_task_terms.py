"""Terms the offline designer reads off a task file, and the environment-reward baseline."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rewardsmith.envs import load_task
from rewardsmith.envs.schema import StateBatch
from rewardsmith.envs.task_file import load_task_file
from rewardsmith.eureka_loop.baseline import ENV_REWARD_SOURCE, is_env_reward, training_source
from rewardsmith.eureka_loop.extract import extract_code
from rewardsmith.eureka_loop.offline import (
    Genome,
    Term,
    baseline_round_zero,
    render_code,
    task_genome_terms,
)
from rewardsmith.eureka_loop.task_terms import derive_terms
from rewardsmith.prompts import render
from rewardsmith.reward.loader import load_reward

EXAMPLES = Path(__file__).resolve().parents[2] / "rewardsmith" / "envs" / "examples"

PENDULUM = """
env_id = "Pendulum-v1"
goal = "Swing the pendulum up and keep it upright."
[fields.cos_angle]
index = 0
description = "cosine of the angle from upright; 1 is upright"
[fields.angular_velocity]
index = 2
description = "angular velocity, limited to +-8"
units = "rad/s"
[fitness]
kind = "{kind}"
field = "cos_angle"
[success]
kind = "fitness_at_least"
threshold = 0.9
"""


def _pendulum(tmp_path: Path, kind: str) -> object:
    path = tmp_path / f"pendulum_{kind}.toml"
    path.write_text(PENDULUM.replace("{kind}", kind))
    return load_task_file(path)


def test_a_survival_task_gets_an_alive_bonus_and_terms_from_its_field_descriptions() -> None:
    terms = derive_terms(load_task_file(EXAMPLES / "cartpole_task.toml"), gamma=0.98)
    assert [t.name for t in terms] == [
        "alive_bonus",
        "keep_cart_position_within_limit",
        "calm_cart_velocity",
        "keep_pole_angle_within_limit",
        "calm_pole_angular_velocity",
    ]
    limits = {t.field: t.param for t in terms if t.kind == "within_limit"}
    assert limits == {"cart_position": 2.4, "pole_angle": 0.2094}
    assert sum(t.weight for t in terms[1:]) <= 0.5 + 1e-9 < terms[0].weight


def test_fitness_and_success_kinds_map_to_their_terms(tmp_path: Path) -> None:
    names = {
        kind: [t.name for t in derive_terms(_pendulum(tmp_path, kind), gamma=0.9)]  # type: ignore[arg-type]
        for kind in ("mean", "max", "final", "final_minus_initial")
    }
    # A limit in a description is a failure bound only in a survival task: here it is a range.
    assert names["mean"] == ["high_cos_angle", "reach_cos_angle"]
    assert names["max"][:2] == ["potential_cos_angle", "reach_cos_angle"]
    assert names["final"][0] == "potential_cos_angle"
    assert names["final_minus_initial"][0] == "progress_cos_angle"
    assert "reach_cos_angle" not in names["final_minus_initial"]  # no initial value per step
    potential = derive_terms(_pendulum(tmp_path, "max"), gamma=0.9)[0]  # type: ignore[arg-type]
    assert potential.param == 0.9
    # A reaching task: an offset to the target is to shrink; built-in tasks get no task terms.
    reacher = [t.name for t in derive_terms(load_task_file(EXAMPLES / "reacher_task.toml"), 0.99)]
    assert reacher == ["closer_fingertip_to_target"]
    assert derive_terms(load_task("cartpole"), gamma=0.99) == []


def test_rendered_task_terms_compute_what_they_are_named_for(tmp_path: Path) -> None:
    task = load_task_file(EXAMPLES / "cartpole_task.toml")
    genome = Genome(shaping=task_genome_terms(derive_terms(task, gamma=0.98)))
    scales = {("calm", "cart_velocity"): 1.0, ("calm", "pole_angular_velocity"): 1.0}
    path = tmp_path / "reward.py"
    path.write_text(render_code(genome, None, scales))
    fields = ("cart_position", "cart_velocity", "pole_angle", "pole_angular_velocity")
    state = StateBatch({name: np.zeros(2) for name in fields})
    after = StateBatch(
        {
            "cart_position": np.array([0.0, 4.8]),  # beyond the limit: capped at -1
            "cart_velocity": np.array([0.0, 100.0]),  # calm is bounded too
            "pole_angle": np.array([0.0, 0.2094 / 2]),
            "pole_angular_velocity": np.zeros(2),
        }
    )
    total, parts = load_reward(path)(state, np.array([0, 1]), after)
    np.testing.assert_allclose(parts["alive_bonus"], [1.0, 1.0])
    np.testing.assert_allclose(parts["keep_cart_position_within_limit"], [0.0, -0.125])
    np.testing.assert_allclose(parts["keep_pole_angle_within_limit"], [0.0, -0.125 / 4])
    np.testing.assert_allclose(parts["calm_cart_velocity"], [0.0, -0.125])
    assert np.all(total > 0.5)  # a step alive pays more than every penalty costs
    assert Term("alive", "", 1.0).name == "alive_bonus"


def test_without_a_human_reward_round_zero_is_the_environment_reward_then_the_task_terms() -> None:
    task = load_task_file(EXAMPLES / "cartpole_task.toml")
    derived = derive_terms(task, gamma=0.98)
    plan = baseline_round_zero(derived, slots=4)
    assert [g.env_reward for g, _ in plan] == [True, False]
    assert "environment's own reward" in plan[0][1][0] and "alive_bonus" in plan[1][1][0]
    assert len(baseline_round_zero(derived, slots=1)) == 1
    # The baseline travels as code like any reply, and is recognised after extraction.
    code = render_code(plan[0][0], None, {})
    reply = render("offline_reply", notes=plan[0][1], genome=plan[0][0].to_json(), code=code)
    extracted = extract_code(reply)
    assert code == ENV_REWARD_SOURCE and is_env_reward(extracted)
    assert training_source(extracted) is None and training_source("x = 1\n") == "x = 1\n"
    assert Genome.from_record(plan[0][0].to_dict()) == plan[0][0]
    assert not Genome.from_record('{"human_weights": {}, "shaping": []}').env_reward
