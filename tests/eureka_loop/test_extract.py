"""Finding the reward function in the many shapes an LLM reply takes."""

from __future__ import annotations

import ast

import pytest

from rewardsmith.eureka_loop.extract import ExtractError, extract_code

REWARD = """\
import numpy as np


def compute_reward(state, action, next_state):
    forward = next_state.root_x_velocity
    ctrl = 0.1 * np.sum(action**2, axis=-1)
    return forward - ctrl, {"forward": forward, "ctrl_cost": -ctrl}
"""


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```"


def test_python_fence_with_prose_around() -> None:
    reply = f"Here is a reward that pays forward speed:\n\n{fenced(REWARD)}\n\nIt also adds a cost."

    assert extract_code(reply) == REWARD


@pytest.mark.parametrize("lang", ["", "py", "Python", "python3"])
def test_other_fence_labels(lang: str) -> None:
    assert extract_code(fenced(REWARD, lang)) == REWARD


def test_tilde_fence() -> None:
    assert extract_code(f"~~~python\n{REWARD}~~~\n") == REWARD


def test_several_blocks_picks_the_one_defining_compute_reward() -> None:
    reply = (
        "First the fields I use:\n"
        + fenced("print(state.root_x_velocity)\n")
        + "\nand the reward:\n"
        + fenced(REWARD)
        + "\nExample output:\n"
        + fenced("reward: 1.23\n", "text")
    )

    assert extract_code(reply) == REWARD


def test_several_defining_blocks_picks_the_last() -> None:
    draft = "def compute_reward(state, action, next_state):\n    return 0, {}\n"
    reply = f"A draft:\n{fenced(draft)}\nImproved version:\n{fenced(REWARD)}\n"

    assert extract_code(reply) == REWARD


def test_single_block_without_compute_reward_is_returned() -> None:
    code = "def reward(state):\n    return state.x\n"

    assert extract_code(f"Try this:\n{fenced(code)}") == code


def test_several_blocks_none_defining_is_an_error() -> None:
    reply = fenced("x = 1\n") + "\n" + fenced("y = 2\n")

    with pytest.raises(ExtractError, match="2 code blocks but none defines"):
        extract_code(reply)


def test_bare_code_without_fence() -> None:
    assert extract_code(REWARD) == REWARD


def test_bare_code_with_prose_around() -> None:
    reply = (
        f"Sure! Here is the reward function.\n\n{REWARD}\nThis rewards speed and penalises effort."
    )

    assert extract_code(reply) == REWARD


def test_bare_code_prose_that_looks_like_code_is_trimmed() -> None:
    reply = f"{REWARD}\nif you want more speed: raise the weight.\n"

    code = extract_code(reply)

    assert code == REWARD
    ast.parse(code)


def test_indented_fence_in_a_list_item() -> None:
    indented = "".join(f"   {line}\n" if line else "\n" for line in REWARD.splitlines())
    reply = f"1. The reward:\n   ```python\n{indented}   ```\n"

    assert extract_code(reply) == REWARD


def test_unclosed_fence_from_a_cut_off_reply() -> None:
    reply = f"Here it is:\n```python\n{REWARD}"

    assert extract_code(reply) == REWARD


def test_think_section_is_ignored() -> None:
    draft = "def compute_reward(state, action, next_state):\n    return 0, {}\n"
    reply = f"<think>Maybe:\n{fenced(draft)}\nNo, better with a cost.</think>\n{fenced(REWARD)}"

    assert extract_code(reply) == REWARD


def test_windows_line_endings() -> None:
    reply = fenced(REWARD).replace("\n", "\r\n")

    assert extract_code(reply) == REWARD


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "the reply is empty"),
        ("   \n", "the reply is empty"),
        ("I cannot help with that.", "contains no code block"),
        ("```python\n```", "code block is empty"),
    ],
)
def test_no_code_is_an_error_that_says_why(reply: str, message: str) -> None:
    with pytest.raises(ExtractError, match=message):
        extract_code(reply)
