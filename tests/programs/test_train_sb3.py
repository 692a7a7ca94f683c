"""The training worker's TensorBoard log: the reward's own names become plain tags."""

from __future__ import annotations

from rewardsmith.programs.train_sb3 import tensorboard_tag


def test_a_reward_terms_name_becomes_a_plain_bounded_tag() -> None:
    assert tensorboard_tag("upright") == "reward_terms/upright"
    # The candidate names its terms: no path separators, escapes or bidi overrides reach the log.
    hostile = tensorboard_tag("../../x/\u202e\x1b[2J" + "a" * 500)
    assert hostile.startswith("reward_terms/.._.._x_") and len(hostile) == len("reward_terms/") + 64
    assert set(hostile.removeprefix("reward_terms/")) <= set("._-x2Ja_")
