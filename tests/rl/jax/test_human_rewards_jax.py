"""Each JAX task's human reward, in contract form, reproduces its gymnax environment's reward.

Random-policy rollouts of the JAX variant (batched, as training steps it); at every transition
before an environment's termination, the task's human reward file, called once under numpy and
once with `np` bound to `jax.numpy`, must match gymnax's own reward within 1e-5. The state fields
and actions are exactly what the reward sees in training.
"""

from __future__ import annotations

from functools import cache
from importlib.util import find_spec
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
if find_spec("gymnax") is None or find_spec("brax") is None:  # found, not imported: collection
    pytest.skip("the jax extra is not installed: pip install -e '.[jax]'", allow_module_level=True)

from rewardsmith.envs import load_task  # noqa: E402
from rewardsmith.envs.schema import StateBatch  # noqa: E402
from rewardsmith.programs.jax_contract import JaxStateBatch, load_jax_reward  # noqa: E402
from rewardsmith.reward.loader import load_reward_source  # noqa: E402
from rewardsmith.rl.jax import GYMNAX_TASK_IDS, JAX_TASK_IDS, MJX_TASK_IDS  # noqa: E402
from rewardsmith.rl.jax.tasks import TASKS  # noqa: E402

TOLERANCE = 1e-5
N_ENVS = 8
STEPS = 40


@cache
def compiled(task_id: str) -> tuple[Any, Any, Any]:
    """The task's batch environment with its reset and step jitted, once per test session.

    MJX compiles each for up to a minute on two CPU cores; both tests below share them.
    """
    env = TASKS[task_id].make_batch_env()
    return env, jax.jit(env.reset), jax.jit(env.step)


def random_transitions(task_id: str, seed: int = 0) -> list[dict[str, Any]]:
    """Transitions of N_ENVS random-policy environments, each with its alive mask."""
    env, reset, step = compiled(task_id)
    key = jax.random.PRNGKey(seed)
    key, reset_key = jax.random.split(key)
    state = reset(jax.random.split(reset_key, N_ENVS))
    alive = np.ones(N_ENVS, dtype=bool)
    out = []
    for _ in range(STEPS):
        key, action_key = jax.random.split(key)
        action = jax.random.uniform(action_key, (N_ENVS, env.action_size), minval=-1.0, maxval=1.0)
        nxt = step(state, action)
        out.append(
            {
                "state": {k: np.asarray(v) for k, v in env.fields(state.pipeline_state).items()},
                "action": np.asarray(env.task.contract_action(env.env_action(action))),
                "next_state": {k: np.asarray(v) for k, v in env.fields(nxt.pipeline_state).items()},
                "env_reward": np.asarray(nxt.reward, dtype=np.float64),
                "alive": alive.copy(),
            }
        )
        alive &= np.asarray(nxt.done) < 0.5
        state = nxt
    return out


def test_every_jax_task_has_a_variant_and_a_budget() -> None:
    from rewardsmith.rl.jax.budgets import BUDGETS

    assert set(TASKS) == set(BUDGETS) == set(JAX_TASK_IDS)


# MJX compiles its reset and step for up to a minute on two CPU cores: marked `mjx`, which the
# README's test command leaves out and CI runs in a step of its own.
ALL_TASKS = [
    *sorted(GYMNAX_TASK_IDS),
    *[
        pytest.param(task, marks=[pytest.mark.slow, pytest.mark.mjx])
        for task in sorted(MJX_TASK_IDS)
    ],
]


@pytest.mark.parametrize("task_id", ALL_TASKS)
@pytest.mark.slow
def test_fields_are_the_sb3_tasks_fields(task_id: str) -> None:
    env, reset, _ = compiled(task_id)
    state = reset(jax.random.split(jax.random.PRNGKey(0), N_ENVS))  # the shape compiled below
    schema = load_task(task_id).schema
    fields = env.fields(state.pipeline_state)
    assert tuple(fields) == schema.names
    for field in schema.fields:
        assert fields[field.name].shape == (N_ENVS, *field.shape)


@pytest.mark.parametrize("task_id", ALL_TASKS)
@pytest.mark.slow
def test_human_reward_matches_gymnax_reward(task_id: str) -> None:
    source = load_task(task_id).reward_source("human")
    assert source is not None
    under_numpy = load_reward_source(source, f"{task_id}_human.py")
    under_jax = jax.jit(
        lambda s, a, n: load_jax_reward(source, f"{task_id}_human_jax.py")(
            JaxStateBatch(s), a, JaxStateBatch(n)
        )[0]
    )
    checked = 0
    for t in random_transitions(task_id):
        mask = t["alive"]
        if not mask.any():
            break
        total, _ = under_numpy(StateBatch(t["state"]), t["action"], StateBatch(t["next_state"]))
        np.testing.assert_allclose(
            np.asarray(total)[mask], t["env_reward"][mask], rtol=0, atol=TOLERANCE
        )
        traced = np.asarray(under_jax(t["state"], t["action"], t["next_state"]))
        np.testing.assert_allclose(traced[mask], t["env_reward"][mask], rtol=0, atol=TOLERANCE)
        checked += int(mask.sum())
    assert checked >= N_ENVS * 5
