"""BAD_REWARDS case 25: a reward that reads a field revealing the episode's outcome is flagged."""

from __future__ import annotations

from pathlib import Path

from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.hacking import FLAG, hacking_suspects, outcome_fields_read
from rewardsmith.reward.static import fields_read
from rewardsmith.runs.candidate import CandidateFiles, CandidateKey

LEAKY = """import numpy as np


def compute_reward(state, action, next_state):
    landed = 100.0 * next_state["at_rest"]
    near = -np.abs(next_state.x_position)
    return landed + near, {"landed": landed, "near": near}
"""


def test_fields_read_sees_attribute_and_item_access() -> None:
    assert fields_read(LEAKY) == {"at_rest", "x_position"}


def test_reading_an_outcome_field_is_flagged_and_others_are_not() -> None:
    lander = load_task("lunarlander")
    assert outcome_fields_read(lander.schema, LEAKY) == ["at_rest"]
    cartpole = load_task("cartpole")
    assert outcome_fields_read(cartpole.schema, cartpole.reward_source("human")) == []


def test_flag_reaches_the_run_record(tmp_path: Path) -> None:
    cand = CandidateFiles(tmp_path, CandidateKey(0, 1))
    cand.write("critique.json", {"ok": True, "outcome_fields": ["at_rest"]})
    (suspect,) = hacking_suspects(tmp_path)
    assert suspect["candidate"] == "r00c01" and suspect["flag"] == FLAG
    assert "at_rest" in suspect["reasons"][0]
