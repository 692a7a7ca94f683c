"""BAD_REWARDS case 25: a reward that reads a field revealing the episode's outcome is flagged,
unless the task's own human reward pays for that outcome too."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.task_file import TaskFileError
from rewardsmith.eureka_loop.hacking import FLAG, hacking_suspects, outcome_fields_read
from rewardsmith.reward.static import fields_read
from rewardsmith.runs.candidate import CandidateFiles, CandidateKey

LEAKY = """import numpy as np


def compute_reward(state, action, next_state):
    landed = 100.0 * next_state["at_rest"]
    near = -np.abs(next_state.x_position)
    return landed + near, {"landed": landed, "near": near}
"""

# A CartPole task file whose `upright` field is the outcome: reading it is case 25.
TASK = """
env_id = "CartPole-v1"
goal = "Keep the pole up."

[fields.pole_angle]
index = 2
description = "pole angle from upright"
units = "rad"

[fields.upright]
index = 3
description = "stands in for a 'still balanced' flag"
reveals_outcome = {reveals}

[fitness]
kind = "episode_length"
"""

PAYS_FOR_OUTCOME = """def compute_reward(state, action, next_state):
    paid = 10.0 * next_state.upright
    return paid, {"paid": paid}
"""


def task_file(tmp_path: Path, reveals: str = "true") -> Path:
    path = tmp_path / "task.toml"
    path.write_text(textwrap.dedent(TASK.format(reveals=reveals)))
    return path


def test_fields_read_sees_attribute_and_item_access() -> None:
    assert fields_read(LEAKY) == {"at_rest", "x_position"}


def test_reading_a_declared_outcome_field_is_flagged(tmp_path: Path) -> None:
    task = load_task(task_file=task_file(tmp_path))
    assert task.schema["upright"].reveals_outcome
    assert outcome_fields_read(task.schema, PAYS_FOR_OUTCOME, task.reward_source("human")) == [
        "upright"
    ]
    assert (
        outcome_fields_read(
            task.schema, "def compute_reward(s, a, n):\n    return n.pole_angle, {}\n"
        )
        == []
    )


def test_the_human_reward_sanctions_the_outcomes_it_pays_for() -> None:
    """LunarLander's own reward pays +-100 for resting or crashing: neither it nor a candidate
    that builds on it is a hacking suspect for reading those fields."""
    lander = load_task("lunarlander")
    human = lander.reward_source("human")
    assert human is not None
    assert outcome_fields_read(lander.schema, LEAKY) == ["at_rest"]  # without the reference
    assert outcome_fields_read(lander.schema, human, human) == []
    assert outcome_fields_read(lander.schema, LEAKY, human) == []
    cartpole = load_task("cartpole")
    assert outcome_fields_read(cartpole.schema, cartpole.reward_source("human")) == []


def test_reveals_outcome_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match=r"fields\.upright\.reveals_outcome.*true or false"):
        load_task(task_file=task_file(tmp_path, reveals='"yes"'))


def test_flag_reaches_the_run_record(tmp_path: Path) -> None:
    cand = CandidateFiles(tmp_path, CandidateKey(0, 1))
    cand.write("critique.json", {"ok": True, "outcome_fields": ["upright"]})
    (suspect,) = hacking_suspects(tmp_path)
    assert suspect["candidate"] == "r00c01" and suspect["flag"] == FLAG
    assert "upright" in suspect["reasons"][0]
