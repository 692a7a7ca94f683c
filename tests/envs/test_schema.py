"""Every built-in task exposes exactly its schema's fields, with the right shapes and meanings."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest

from rewardsmith.envs import StateBatch, TaskNotFoundError, list_tasks, load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.envs.schema import Field, FieldRecord, StateSchema
from rewardsmith.rl.rollout import random_policy, rollout_episodes
from rewardsmith.rl.sb3.vec_reward import STATE_KEY, StateFieldsWrapper, make_vec_env, stack_fields

BUILT_INS = list_tasks()
MUJOCO = ["halfcheetah", "hopper", "walker2d", "ant", "humanoid"]


def test_registry_has_the_required_built_ins() -> None:
    required = {
        "cartpole", "acrobot", "mountaincar-continuous", "pendulum", "lunarlander",
        "halfcheetah", "hopper", "walker2d", "ant", "humanoid",
    }  # fmt: skip
    assert required <= set(BUILT_INS)


def test_cartpole_field_names_are_the_documented_ones() -> None:
    names = load_task("cartpole").schema.names
    assert names == ("cart_position", "cart_velocity", "pole_angle", "pole_angular_velocity")


def check_record(adapter: TaskAdapter, record: object) -> None:
    assert isinstance(record, FieldRecord)
    assert tuple(record) == adapter.schema.names  # schema order
    for field in adapter.schema.fields:
        value = record[field.name]
        assert np.shape(value) == field.shape, f"{adapter.id}.{field.name}"
        assert np.all(np.isfinite(value)), f"{adapter.id}.{field.name} is not finite"


@pytest.mark.parametrize("task", BUILT_INS)
def test_fields_match_schema_after_reset_and_steps(task: str) -> None:
    adapter = load_task(task)
    assert adapter.schema.size == sum(math.prod(f.shape) for f in adapter.schema.fields)
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    env.action_space.seed(0)
    _obs, info = env.reset(seed=0)
    check_record(adapter, info[STATE_KEY])
    for _ in range(25):
        obs, _reward, terminated, truncated, info = env.step(env.action_space.sample())
        check_record(adapter, info[STATE_KEY])
        vector = adapter.state_vector(env.env, obs, info)
        assert vector.shape == (adapter.schema.size,) and vector.dtype == np.float64
        fields = adapter.state_fields(env.env, obs, info)
        assert list(fields) == list(adapter.schema.names)
        if terminated or truncated:
            _obs, info = env.reset()
            check_record(adapter, info[STATE_KEY])
    env.close()


@pytest.mark.parametrize("task", BUILT_INS)
def test_batched_state_rows_match_single_env_fields(task: str) -> None:
    """The state batches training builds (per-env wrappers, or gathered from observations)
    hold the fields each environment reports on its own, after resets and steps."""
    adapter = load_task(task)

    def rows(batch: StateBatch) -> np.ndarray:
        return np.concatenate([batch[n].reshape(3, -1) for n in adapter.schema.names], axis=1)

    venv = make_vec_env(adapter, 3, seed=0)
    singles = [StateFieldsWrapper(adapter.make_env(), adapter) for _ in range(3)]
    obs = venv.reset()
    expected = [env.reset(seed=i)[1][STATE_KEY].vector for i, env in enumerate(singles)]
    np.testing.assert_array_equal(rows(venv.state_after_reset(obs)), expected)
    venv.action_space.seed(0)
    for _ in range(40):
        actions = np.stack([venv.action_space.sample() for _ in range(3)])
        obs, _rewards, dones, infos = venv.step(actions)
        reached_batch, start_batch = venv.states_after_step(obs, dones, infos)
        reached = rows(reached_batch)
        start = None if start_batch is None else rows(start_batch)
        starts = []
        for i, env in enumerate(singles):
            _o, _r, terminated, truncated, info = env.step(actions[i])
            np.testing.assert_array_equal(reached[i], info[STATE_KEY].vector)
            starts.append(env.reset()[1][STATE_KEY].vector if terminated or truncated else None)
        assert (start is None) == (not dones.any())
        for i, vector in enumerate(starts):
            if vector is not None:
                np.testing.assert_array_equal(start[i], vector)  # type: ignore[index]
        adapter.schema.validate(stack_fields([adapter.schema.record(r.copy()) for r in reached]), 3)
    venv.close()


def test_cartpole_fields_are_the_observation() -> None:
    adapter = load_task("cartpole")
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    obs, info = env.reset(seed=1)
    record = info[STATE_KEY]
    assert [record[name] for name in adapter.schema.names] == pytest.approx(obs.tolist(), abs=0)


@pytest.mark.parametrize("task", MUJOCO)
def test_mujoco_fields_read_the_simulator(task: str) -> None:
    """Each field is the documented simulator quantity (guards the flat layout's offsets)."""
    adapter = load_task(task)
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    env.reset(seed=2)
    env.action_space.seed(2)
    *_rest, info = env.step(env.action_space.sample())
    record, base = info[STATE_KEY], env.unwrapped
    qpos, qvel = base.data.qpos, base.data.qvel  # type: ignore[attr-defined]
    assert record["x_position"] == qpos[0]
    assert record["x_velocity"] == info["x_velocity"]
    np.testing.assert_array_equal(record["joint_angles"], qpos[adapter.joint_slice])  # type: ignore[attr-defined]
    np.testing.assert_array_equal(
        record["joint_velocities"],
        qvel[adapter.joint_velocity_slice],  # type: ignore[attr-defined]
    )
    assert record["torso_height"] == qpos[adapter.height_index]  # type: ignore[attr-defined]
    if "torso_angle" in record:
        assert record["torso_angle"] == qpos[2]
    else:
        assert record["y_position"] == qpos[1]
        assert record["y_velocity"] == info["y_velocity"]
        np.testing.assert_array_equal(record["torso_orientation"], qpos[3:7])
        np.testing.assert_array_equal(record["contact_forces"], base.data.cfrc_ext[1:].ravel())  # type: ignore[attr-defined]
    if "is_healthy" in record:
        # Read from the step's own report: it must agree with the env's test on every step.
        for _ in range(80):
            _obs, _r, terminated, truncated, info = env.step(env.action_space.sample())
            assert info[STATE_KEY]["is_healthy"] == float(base.is_healthy)  # type: ignore[attr-defined]
            if terminated or truncated:
                _obs, info = env.reset()
                assert info[STATE_KEY]["is_healthy"] == float(base.is_healthy)  # type: ignore[attr-defined]


def test_pendulum_and_acrobot_fields_are_derived_correctly() -> None:
    pendulum = load_task("pendulum")
    env = StateFieldsWrapper(pendulum.make_env(), pendulum)
    _obs, info = env.reset(seed=0)
    th, thdot = env.unwrapped.state  # type: ignore[attr-defined]
    assert -math.pi <= info[STATE_KEY]["pole_angle"] < math.pi
    assert math.cos(info[STATE_KEY]["pole_angle"]) == pytest.approx(math.cos(th))
    assert info[STATE_KEY]["angular_velocity"] == thdot
    acrobot = load_task("acrobot")
    env = StateFieldsWrapper(acrobot.make_env(), acrobot)
    _obs, info = env.reset(seed=0)
    s = env.unwrapped.state  # type: ignore[attr-defined]
    assert info[STATE_KEY]["tip_height"] == pytest.approx(-math.cos(s[0]) - math.cos(s[0] + s[1]))


@pytest.mark.parametrize("task", BUILT_INS)
def test_describe_is_complete(task: str) -> None:
    adapter = load_task(task)
    described = adapter.describe()
    assert {
        "id",
        "env_id",
        "goal",
        "fields",
        "fitness",
        "success",
        "default_algo",
        "default_steps",
        "default_eval_seeds",
    } <= set(described)
    assert described["id"] == task
    assert len(described["goal"]) > 60, "the goal should be a paragraph a user would write"
    assert described["fitness"]
    assert described["success"] is None or described["success"]
    assert [f["name"] for f in described["fields"]] == list(adapter.schema.names)
    for field, spec in zip(described["fields"], adapter.schema.fields, strict=True):
        assert field["description"], f"{task}.{field['name']} has no meaning"
        assert field["shape"] == spec.shape_text()
    assert described["default_algo"] in ("ppo", "sac")
    assert described["default_steps"] > 0 and described["default_eval_seeds"] >= 2
    json.dumps(described)  # the CLI prints it as JSON


@pytest.mark.parametrize("task", ["cartpole", "pendulum", "lunarlander", "halfcheetah"])
def test_fitness_and_success_are_computed_from_episodes(task: str) -> None:
    adapter = load_task(task)
    episodes = rollout_episodes(adapter, random_policy(adapter, 0), 2, seed=0)
    for episode in episodes:
        assert math.isfinite(adapter.fitness(episode))
        assert adapter.success(episode) in (True, False, None)
        assert {name: values.shape[0] for name, values in episode.states.items()} == dict.fromkeys(
            adapter.schema.names, episode.length + 1
        )


def test_unknown_task_lists_the_known_ones() -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        load_task("cartpol")
    message = str(caught.value)
    assert "cartpol" in message
    assert all(task in message for task in BUILT_INS)
    assert "--task-file" in message


def test_no_task_at_all_says_what_to_pass() -> None:
    with pytest.raises(TaskNotFoundError, match="task-file"):
        load_task()


def test_state_batch_is_read_only() -> None:
    batch = StateBatch({"pole_angle": np.array([0.1, -0.2]), "joints": np.zeros((2, 3))})
    with pytest.raises(AttributeError, match="read-only"):
        batch.pole_angle = np.zeros(2)
    with pytest.raises(ValueError, match="read-only"):
        batch.pole_angle[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        batch.joints[:, 0] += 1.0
    assert batch["pole_angle"] is batch.pole_angle
    assert "joints" in batch and sorted(batch.keys()) == ["joints", "pole_angle"]


def test_state_batch_unknown_field_lists_the_fields() -> None:
    batch = StateBatch({"cart_position": np.zeros(2), "pole_angle": np.zeros(2)})
    with pytest.raises(AttributeError) as caught:
        _ = batch.pole_angel
    assert "pole_angel" in str(caught.value)
    assert "cart_position, pole_angle" in str(caught.value)


def test_batched_rows_are_read_only_views() -> None:
    schema = StateSchema((Field("a", "a scalar"), Field("v", "a vector", shape=(2,))))
    rows = np.arange(6.0).reshape(2, 3)
    batch = StateBatch.from_rows(rows, schema.layout)
    np.testing.assert_array_equal(batch.a, [0.0, 3.0])
    np.testing.assert_array_equal(batch.v, [[1.0, 2.0], [4.0, 5.0]])
    with pytest.raises(ValueError, match="read-only"):
        batch.v[0, 0] = 9.0
    with pytest.raises(ValueError, match="read-only"):
        rows[0, 0] = 9.0
    with pytest.raises(AttributeError, match="the fields are: a, v"):
        _ = batch.b
    assert batch.as_dict().keys() == {"a", "v"} and "v" in batch


def test_field_record_is_an_immutable_mapping() -> None:
    schema = StateSchema((Field("a", "a scalar"), Field("v", "a vector", shape=(2,))))
    record = schema.record(np.array([1.0, 2.0, 3.0]))
    assert dict(record).keys() == {"a", "v"} and record["a"] == 1.0
    assert copy.deepcopy(record) is record  # SB3 deep-copies infos every step
    with pytest.raises(ValueError, match="read-only"):
        record["v"][0] = 0.0
    assert schema.flatten({"a": 1.0, "v": [2.0, 3.0]}).tolist() == [1.0, 2.0, 3.0]


def test_adapters_may_implement_either_state_hook_or_an_obs_layout() -> None:
    from rewardsmith.envs.adapter import TaskAdapter
    from rewardsmith.envs.obs_layout import FromInfo, FromObs, ObservationLayout

    schema = StateSchema((Field("a", "a scalar"), Field("v", "a vector", shape=(2,))))
    obs, info = np.array([5.0, 6.0, 7.0], dtype=np.float32), {"speed": 3.0}

    class ByFields(TaskAdapter):
        def state_fields(self, env: object, obs: np.ndarray, info: dict) -> dict:
            return {"a": float(obs[0]), "v": obs[1:]}

    class ByLayout(TaskAdapter):
        obs_layout = ObservationLayout(schema, (FromInfo("a", "speed"), FromObs("v", (2, 0))))

    class ByNothing(TaskAdapter):
        pass

    for cls in (ByFields, ByLayout, ByNothing):
        cls.schema = schema
    assert ByFields().state_vector(None, obs, info).tolist() == [5.0, 6.0, 7.0]  # type: ignore[arg-type]
    assert ByLayout().state_vector(None, obs, info).tolist() == [3.0, 7.0, 5.0]  # type: ignore[arg-type]
    assert ByLayout().state_fields(None, obs, {})["a"] == 0.0  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="neither"):
        ByNothing().state_vector(None, obs, info)  # type: ignore[arg-type]
    with pytest.raises(NotImplementedError, match="neither"):
        ByNothing().state_fields(None, obs, info)  # type: ignore[arg-type]
