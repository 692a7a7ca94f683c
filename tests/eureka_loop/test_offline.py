"""The offline designer's genomes: what round 0 tries and what the rendered code computes."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.schema import StateBatch
from rewardsmith.eureka_loop.offline import (
    ABLATION_WEIGHT,
    Genome,
    Term,
    _parent,
    human_components,
    mutate,
    render_code,
    round_zero,
)
from rewardsmith.reward.loader import load_reward
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.store import RunStore


def test_human_components_are_read_from_the_source_without_running_it() -> None:
    pendulum = load_task("pendulum").reward_source("human")
    assert human_components(pendulum) == ["angle", "velocity", "torque"]
    assert (
        human_components("def compute_reward(state, action, next_state):\n    return f()\n") == []
    )
    assert human_components(None) == []


@pytest.mark.parametrize("task", ["cartpole", "pendulum", "hopper", "lunarlander", "ant"])
def test_every_builtin_human_reward_names_its_components(task: str) -> None:
    assert human_components(load_task(task).reward_source("human"))


def test_round_zero_is_the_human_reward_then_one_ablation_per_component() -> None:
    plan = round_zero(["angle", "velocity", "torque"], slots=4)
    assert [genome.human_weights for genome, _ in plan] == [
        {},
        {"angle": ABLATION_WEIGHT},
        {"velocity": ABLATION_WEIGHT},
        {"torque": ABLATION_WEIGHT},
    ]
    assert "unchanged" in plan[0][1][0] and "velocity" in plan[2][1][0]
    assert len(round_zero(["a", "b", "c", "d", "e"], slots=3)) == 3
    # A single component would only be rescaled: the other slots go to random mutations.
    assert len(round_zero(["alive"], slots=4)) == 1


@pytest.mark.parametrize("task", ["cartpole", "pendulum", "hopper"])
def test_the_unchanged_human_reward_is_written_verbatim(task: str) -> None:
    """So the final evaluation can tell it is the human reward (and train it once)."""
    human = load_task(task).reward_source("human")
    assert render_code(Genome(), human, {}) == human
    ablated = render_code(Genome({"x": ABLATION_WEIGHT}), human, {})
    assert "def _human_reward(" in ablated and ablated != human


def _pendulum_batch(angle: list[float], velocity: list[float]) -> StateBatch:
    return StateBatch({"pole_angle": np.array(angle), "angular_velocity": np.array(velocity)})


def test_rendered_genome_reweights_the_human_components(tmp_path: Path) -> None:
    human = load_task("pendulum").reward_source("human")
    path = tmp_path / "reward.py"
    genome = Genome({"velocity": 0.1}, [Term("toward_zero", "pole_angle", 0.5)])
    path.write_text(render_code(genome, human, {("toward_zero", "pole_angle"): 2.0}))
    reward = load_reward(path)
    state = _pendulum_batch([0.5, -1.0], [2.0, 0.0])
    next_state = _pendulum_batch([0.25, -1.5], [1.0, 0.0])
    action = np.array([[1.0], [0.0]])
    total, parts = reward(state, action, next_state)
    np.testing.assert_allclose(parts["angle"], [-0.25, -1.0])
    np.testing.assert_allclose(parts["velocity"], [-0.1 * 0.1 * 4.0, 0.0])
    np.testing.assert_allclose(parts["shape_toward_zero_pole_angle"], [0.25, -0.5])
    np.testing.assert_allclose(total, sum(parts.values()))


def test_mutations_always_change_something_and_keep_the_parent() -> None:
    rng = np.random.default_rng(0)
    parent = Genome({"velocity": 0.1})
    options = [Term("toward_zero", "pole_angle", 1.0), Term("decrease", "angular_velocity", 1.0)]
    for _ in range(20):
        child, notes = mutate(parent, rng, options, ["angle", "velocity", "torque"])
        assert notes and child != parent
    assert parent == Genome({"velocity": 0.1})


def test_a_genome_with_nothing_to_vary_is_a_clear_error_not_an_endless_loop() -> None:
    with pytest.raises(ValueError, match="nothing to vary"):
        mutate(Genome(), np.random.default_rng(0), [], [])


def test_the_next_round_evolves_from_the_best_candidates_recorded_genome(tmp_path: Path) -> None:
    """The parent comes from the best candidate's genome.json, as this version writes it (a
    versioned record) and as runs before it did (the genome's JSON text, unversioned)."""
    run = RunStore(tmp_path).create_run("cartpole", {}, ["test"], seed=0)
    ctx = SimpleNamespace(run=run)
    parent = Genome(human_weights={"alive": 2.0}, shaping=[Term("toward_zero", "pole_angle", 0.5)])
    best = run.candidate(CandidateKey(1, 0))
    best.write("genome.json", parent.to_dict())
    best.write_outcome(
        {"ok": True, "components": {"alive": 1.0, "shape_toward_zero_pole_angle": 0.1}}
    )
    key = {"round": 1, "idx": 0}
    human = load_task("cartpole").reward_source("human")
    assert _parent(ctx, key, Genome(), human) == (parent, ["alive"])  # type: ignore[arg-type]
    (best.path / "genome.json").write_text(parent.to_json())  # as older runs wrote it
    assert _parent(ctx, key, Genome(), human)[0] == parent  # type: ignore[arg-type]
    run.close()
