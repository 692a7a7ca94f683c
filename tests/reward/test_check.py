"""Output checks on reward calls: BAD_REWARDS.md cases 6-10 at the unit level.

Each bad result is checked twice: by `check_output` / `call_reward` directly (what the smoke test
and the checkpoint evaluations use), and through `ContractRewardVecEnv` (what training runs every
step, with its own fast path for well-formed results), which must end in the same category.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.reward.check import check_output
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.loader import load_reward
from rewardsmith.rl.reward_process import RewardProcess
from rewardsmith.rl.sb3.vec_reward import ContractRewardVecEnv, call_reward, make_vec_env

E = ErrorCategory
N = 4
ONES = np.ones(N)


def bad(result: Any) -> RewardError:
    with pytest.raises(RewardError) as caught:
        check_output(result, N, step=7)
    return caught.value


@pytest.mark.parametrize("result", [None, "1.0", 1.0, [ONES, {}], (ONES,), (ONES, {}, {})])
def test_not_a_pair_is_a_return_type_error(result: Any) -> None:
    error = bad(result)
    assert error.category == E.RETURN_TYPE_ERROR
    assert "(total, {name: component})" in error.message


@pytest.mark.parametrize("total", [None, "1.0"])
def test_total_none_or_string_is_a_return_type_error(total: Any) -> None:
    assert bad((total, {})).category == E.RETURN_TYPE_ERROR


@pytest.mark.parametrize(
    "total",
    [np.ones((N, 1)), np.ones(N + 1), np.ones((N, 2)), np.array(1.0), 1.0, np.float64(1.0), 3],
    ids=["N-by-1", "N+1", "N-by-2", "0-d", "float", "numpy-scalar", "int"],
)
def test_wrong_total_shape_is_a_shape_error(total: Any) -> None:
    error = bad((total, {}))
    assert error.category == E.SHAPE_ERROR
    assert f"[{N}]" in error.message  # says what was expected


def test_shape_error_says_expected_and_got() -> None:
    error = bad((np.ones((N, 1)), {}))
    assert f"[{N}, 1]" in error.message and f"expected [{N}]" in error.message


def test_component_python_number_is_a_dtype_error() -> None:
    error = bad((ONES, {"alive": 1.0}))
    assert error.category == E.DTYPE_ERROR and error.component == "alive"


def test_component_list_is_a_dtype_error() -> None:
    assert bad((ONES, {"alive": [1.0] * N})).category == E.DTYPE_ERROR


def test_component_wrong_length_is_a_shape_error() -> None:
    error = bad((ONES, {"alive": np.ones(N - 1)}))
    assert error.category == E.SHAPE_ERROR and error.component == "alive"


@pytest.mark.parametrize("values", [np.array(["a"] * N), np.array([None] * N, dtype=object)])
def test_non_numeric_arrays_are_dtype_errors(values: np.ndarray) -> None:
    assert bad((values, {})).category == E.DTYPE_ERROR


def test_component_keys_must_be_strings() -> None:
    assert bad((ONES, {1: ONES})).category == E.RETURN_TYPE_ERROR


def test_nan_component_names_the_component_and_step() -> None:
    forward = np.array([0.0, np.nan, 1.0, 2.0])
    error = bad((np.zeros(N), {"alive": ONES, "forward": forward}))
    assert error.category == E.NONFINITE_REWARD
    assert error.component == "forward" and error.step == 7
    assert "1 NaN" in error.message and "'forward'" in error.message


def test_inf_from_overflowing_exp_is_nonfinite() -> None:
    with np.errstate(over="ignore"):
        bonus = np.exp(np.array([1.0, 800.0, 2.0, 3.0]))
    error = bad((bonus, {"bonus": bonus}))
    assert error.category == E.NONFINITE_REWARD
    assert error.component == "bonus" and "1 inf" in error.message


def test_nan_total_with_finite_components_names_the_total() -> None:
    error = bad((np.full(N, np.nan), {"alive": ONES}))
    assert error.category == E.NONFINITE_REWARD and error.component == "total"


def test_good_output_is_float64() -> None:
    total, components = check_output(
        (np.ones(N, dtype=np.float32), {"a": np.arange(N), "b": ONES > 0}), N
    )
    assert total.dtype == np.float64
    assert all(values.dtype == np.float64 for values in components.values())


def write_reward(tmp_path: Path, body: str) -> tuple[Callable[..., Any], str]:
    path = tmp_path / "reward.py"
    path.write_text(
        "import numpy as np\n\n\ndef compute_reward(state, action, next_state):\n" + body
    )
    return load_reward(path), str(path)


def test_name_error_on_first_call_is_a_runtime_error_with_only_user_frames(tmp_path: Path) -> None:
    fn, filename = write_reward(
        tmp_path, "    speed = next_state.cart_velocity\n    return speeed, {}\n"
    )
    state = {"cart_velocity": np.zeros(N)}
    with pytest.raises(RewardError) as caught:
        call_reward(fn, state, np.zeros(N, dtype=np.int64), state, 12, filename)
    error = caught.value
    assert error.category == E.RUNTIME_ERROR and error.step == 12
    assert "NameError" in error.message and "speeed" in error.message
    assert error.traceback is not None
    assert f'File "{filename}", line 6, in compute_reward' in error.traceback
    assert "rewardsmith/" not in error.traceback, "only the user's frames belong in the traceback"


def test_unknown_field_is_a_runtime_error_listing_the_fields(tmp_path: Path) -> None:
    fn, filename = write_reward(tmp_path, "    return next_state.pole_angel, {}\n")
    state = {"pole_angle": np.zeros(N), "cart_position": np.zeros(N)}
    with pytest.raises(RewardError) as caught:
        call_reward(fn, state, np.zeros(N, dtype=np.int64), state, 0, filename)
    assert caught.value.category == E.RUNTIME_ERROR
    assert "cart_position, pole_angle" in caught.value.message


def test_writing_to_the_state_is_a_runtime_error(tmp_path: Path) -> None:
    fn, filename = write_reward(
        tmp_path, "    next_state.pole_angle[0] = 1.0\n    return next_state.pole_angle, {}\n"
    )
    state = {"pole_angle": np.zeros(N)}
    with pytest.raises(RewardError) as caught:
        call_reward(fn, state, np.zeros(N, dtype=np.int64), state, 0, filename)
    assert caught.value.category == E.RUNTIME_ERROR and "read-only" in caught.value.message


# What the training wrapper must do with each bad body: the same category as the direct check.
TRAINING_CASES = {
    "none": ("    return None\n", E.RETURN_TYPE_ERROR, None),
    "bare float": ("    return 1.0\n", E.RETURN_TYPE_ERROR, None),
    "N-by-1 total": ("    t = np.ones((len(action), 1))\n    return t, {}\n", E.SHAPE_ERROR, None),
    "scalar total": ("    return 1.0, {}\n", E.SHAPE_ERROR, None),
    "python-number component": (
        "    t = np.ones(len(action))\n    return t, {'a': 1.0}\n",
        E.DTYPE_ERROR,
        "a",
    ),
    "short component": (
        "    t = np.ones(len(action))\n    return t, {'a': t[:-1]}\n",
        E.SHAPE_ERROR,
        "a",
    ),
    "nan component": (
        "    t = np.ones(len(action))\n    return t, {'a': t, 'b': t * np.nan}\n",
        E.NONFINITE_REWARD,
        "b",
    ),
    "inf total": (
        "    t = np.full(len(action), np.inf)\n    return t, {'a': np.ones(len(action))}\n",
        E.NONFINITE_REWARD,
        "total",
    ),
    "name error": ("    return undefined, {}\n", E.RUNTIME_ERROR, None),
}


CARTPOLE = load_task("cartpole")


def training_reward(filename: str) -> RewardProcess:
    """The reward as training runs it: in a reward process of its own."""
    return RewardProcess(Path(filename).read_text(), filename, CARTPOLE.schema.names)


@pytest.mark.parametrize("case", TRAINING_CASES)
def test_training_wrapper_raises_the_same_categories(case: str, tmp_path: Path) -> None:
    body, category, component = TRAINING_CASES[case]
    _fn, filename = write_reward(tmp_path, body)
    with training_reward(filename) as reward:
        env = ContractRewardVecEnv(make_vec_env(CARTPOLE, 3, seed=0), reward)
        env.reset()
        with pytest.raises(RewardError) as caught:
            env.step(np.zeros(3, dtype=np.int64))
    assert caught.value.category == category
    assert caught.value.component == component
    assert caught.value.step == 3  # environment steps so far, counted over the 3 environments


def test_training_wrapper_accepts_what_check_output_accepts(tmp_path: Path) -> None:
    """Non-float64 but valid outputs (float32, ints, bools) go through the full check and pass."""
    body = (
        "    t = np.ones(len(action), dtype=np.float32)\n"
        "    return t, {'count': np.arange(len(action)), 'flag': t > 0}\n"
    )
    _fn, filename = write_reward(tmp_path, body)
    with training_reward(filename) as reward:
        env = ContractRewardVecEnv(make_vec_env(CARTPOLE, 3, seed=0), reward)
        env.reset()
        for _ in range(4):
            _obs, rewards, _dones, _infos = env.step(np.zeros(3, dtype=np.int64))
            assert rewards.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("names", "said"),
    [
        ([f"c{i}" for i in range(257)], "257 components; at most 256"),
        (["x" * 201], "201 characters; at most 200"),
        ([""], "a component name is empty"),
    ],
    ids=["257-components", "long-name", "empty-name"],
)
def test_components_the_wire_cannot_carry_fail_every_checked_call(
    names: list[str], said: str
) -> None:
    """The contract's own check, so the smoke test (the same call) refuses them before any
    training, not only the reward process during it."""
    from rewardsmith.reward.call import call_reward

    def many(state: Any, action: Any, next_state: Any) -> Any:
        one = np.ones(len(action))
        return one, {name: one for name in names}

    with pytest.raises(RewardError) as info:
        call_reward(many, {"x": np.zeros(4)}, np.zeros(4), {"x": np.zeros(4)}, 3, "r.py")
    assert info.value.category == ErrorCategory.RETURN_TYPE_ERROR
    assert said in info.value.message and info.value.step == 3
