"""The tracer: a reward under numpy and under jax.numpy on the same recorded states, exported.

The sandbox side (`run_trace`) is called directly here on recorded CartPole states; the sandboxed
runs are in `test_training.py`. Rewards that cannot trace get the named `jax_incompatible` error
with the reward's line and the fix; exports with custom calls or disabled checks are refused.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
if find_spec("gymnax") is None or find_spec("brax") is None:  # found, not imported: collection
    pytest.skip("the jax extra is not installed: pip install -e '.[jax]'", allow_module_level=True)

import jax.numpy as jnp  # noqa: E402
from jax import export as jax_export  # noqa: E402

from rewardsmith.envs import load_task  # noqa: E402
from rewardsmith.job_spec import EXPORT_FILE, REWARD_FILE, STATES_FILE  # noqa: E402
from rewardsmith.jobs.smoke import record_states  # noqa: E402
from rewardsmith.programs.jax_export import Signature, call_export, load_reward_export  # noqa: E402
from rewardsmith.programs.trace_jax import run_trace  # noqa: E402
from rewardsmith.reward.errors import ErrorCategory, RewardError  # noqa: E402

HEADER = "import math\nimport numpy as np\n\n\ndef compute_reward(state, action, next_state):\n"


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("states") / STATES_FILE
    return record_states(load_task("cartpole"), path)


def trace(tmp_path: Path, states: Path, source: str) -> dict:
    (tmp_path / REWARD_FILE).write_text(source)
    (tmp_path / STATES_FILE).write_bytes(states.read_bytes())
    record, export = run_trace(tmp_path, "cartpole")
    if export:
        (tmp_path / EXPORT_FILE).write_bytes(export)
    return record


def test_the_human_reward_traces_agrees_and_exports(tmp_path: Path, states: Path) -> None:
    record = trace(tmp_path, states, load_task("cartpole").reward_source("human") or "")
    assert record == {"status": "ok", "components": ["alive"], "warnings": []}
    signature = Signature(load_task("cartpole").schema.names, discrete=True)
    exported, names = load_reward_export((tmp_path / EXPORT_FILE).read_bytes(), signature)
    assert names == ["alive"]
    fields = {n: np.zeros(7, np.float32) for n in signature.fields}
    total, parts = call_export(exported, signature.fields, fields, jnp.zeros(7, jnp.int32), fields)
    np.testing.assert_array_equal(np.asarray(total), np.ones(7))  # any batch size: N is symbolic
    np.testing.assert_array_equal(np.asarray(parts["alive"]), np.ones(7))


def test_a_traceable_shaped_reward_agrees(tmp_path: Path, states: Path) -> None:
    body = (
        "    upright = np.cos(next_state.pole_angle)\n"
        "    centre = -0.1 * np.abs(next_state.cart_position)\n"
        "    push = np.where(action == 1, 0.01, 0.0)\n"
        "    return upright + centre + push, {'upright': upright, 'centre': centre, 'push': push}\n"
    )
    record = trace(tmp_path, states, HEADER + body)
    assert record["status"] == "ok", record
    assert record["components"] == ["centre", "push", "upright"]


BAD = {
    "item assignment": (
        "    r = np.ones_like(next_state.pole_angle)\n"
        "    r[np.abs(next_state.pole_angle) > 0.1] = 0.0\n"
        "    return r, {'r': r}\n",
        7,
        "np.where(mask, new_value, x)",
    ),
    "python if on an array": (
        "    r = np.ones_like(next_state.pole_angle)\n"
        "    if np.mean(next_state.pole_angle) > 0:\n"
        "        r = r * 2\n"
        "    return r, {'r': r}\n",
        7,
        "np.where(condition, a, b)",
    ),
    "np.random": (
        "    noise = np.random.uniform(size=next_state.pole_angle.shape)\n"
        "    return noise, {'noise': noise}\n",
        6,
        "remove the randomness",
    ),
    "float of an array": (
        "    scale = float(np.max(np.abs(next_state.pole_angle)))\n"
        "    r = np.ones_like(next_state.pole_angle) * scale\n"
        "    return r, {'r': r}\n",
        6,
        "np.sqrt, np.exp",
    ),
    "math on an array value": (
        "    r = np.ones_like(next_state.pole_angle) * math.exp(np.max(next_state.pole_angle))\n"
        "    return r, {'r': r}\n",
        6,
        "not math.sqrt",
    ),
    "a library kernel (custom call)": (
        "    m = np.stack([np.stack([next_state.pole_angle, next_state.cart_position], -1)] * 2, -1)\n"
        "    r = np.linalg.eigh(m)[0][:, 0]\n"
        "    return r, {'r': r}\n",
        None,
        "elementwise numpy",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_untraceable_code_is_jax_incompatible_with_the_line_and_the_fix(
    tmp_path: Path, states: Path, case: str
) -> None:
    body, line, fix = BAD[case]
    record = trace(tmp_path, states, HEADER + body)
    assert record["status"] == "error", record
    error = record["error"]
    assert error["category"] == ErrorCategory.JAX_INCOMPATIBLE.value, error
    assert fix in error["message"]
    assert error["line"] == line
    if line is not None:
        assert f"line {line}" in error["message"]
    assert not (tmp_path / EXPORT_FILE).exists()


def test_a_reward_broken_under_numpy_keeps_its_own_error(tmp_path: Path, states: Path) -> None:
    record = trace(tmp_path, states, HEADER + "    return next_state.no_such_field, {}\n")
    assert record["error"]["category"] == ErrorCategory.RUNTIME_ERROR.value


def _eigh(x: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
    m = jnp.stack([jnp.stack([x, x * 0]), jnp.stack([x * 0, x])]).T
    y = jnp.linalg.eigh(m)[0].sum(-1)
    return y, {"y": y}


def test_the_trainer_refuses_custom_calls_and_disabled_checks() -> None:
    signature = Signature(("a",), discrete=True)
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    plain = jax_export.export(jax.jit(_eigh))(spec)
    with pytest.raises(RewardError, match="custom call or host callback 'lapack"):
        load_reward_export(bytes(plain.serialize()), signature)
    unchecked = jax_export.export(
        jax.jit(_eigh),
        disabled_checks=[jax_export.DisabledSafetyCheck.custom_call("lapack_ssyevd_ffi")],
    )(spec)
    with pytest.raises(RewardError, match="disables safety checks"):
        load_reward_export(bytes(unchecked.serialize()), signature)


def test_the_trainer_refuses_garbage_and_other_signatures() -> None:
    signature = Signature(("a", "b"), discrete=True)
    with pytest.raises(RewardError, match=r"not a jax\.export serialisation"):
        load_reward_export(b"\x00" * 64, signature)
    spec = jax.ShapeDtypeStruct((4,), jnp.float32)
    other = jax_export.export(jax.jit(lambda x: (x, {"x": x})))(spec)
    with pytest.raises(RewardError, match="inputs are not"):
        load_reward_export(bytes(other.serialize()), signature)
