"""User task files: the examples load and work, and every mistake gets a clear ValueError."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import Episode
from rewardsmith.envs.task_file import FileTask, TaskFileError, load_task_file
from rewardsmith.reward.call import call_reward
from rewardsmith.reward.loader import load_reward
from rewardsmith.rl.rollout import random_policy, rollout_episodes
from rewardsmith.rl.sb3.vec_reward import STATE_KEY, StateFieldsWrapper, make_vec_env

EXAMPLES = Path(__file__).parents[2] / "rewardsmith" / "envs" / "examples"
CARTPOLE = EXAMPLES / "cartpole_task.toml"

MINIMAL = """
env_id = "CartPole-v1"
goal = "Keep the pole up."

[fields.pole_angle]
index = 2
description = "pole angle from upright"
units = "rad"

[fitness]
kind = "episode_length"
"""


def write(tmp_path: Path, text: str, name: str = "task.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_example_loads_through_the_registry() -> None:
    adapter = load_task(task_file=CARTPOLE)
    assert isinstance(adapter, FileTask)
    assert adapter.id == "cartpole-file" and adapter.env_id == "CartPole-v1"
    assert adapter.source_path == CARTPOLE.resolve()
    assert adapter.schema.names == (
        "cart_position",
        "cart_velocity",
        "pole_angle",
        "pole_angular_velocity",
    )
    assert adapter.schema["pole_angle"].units == "rad"
    assert "\n" not in adapter.goal and adapter.goal.startswith("Balance a pole")
    assert adapter.training.steps == 100000 and adapter.training.hyperparams["ppo"]["n_steps"] == 32
    described = adapter.describe()
    assert described["source"] == str(CARTPOLE.resolve())
    assert described["human_reward"] is None and described["sparse_reward"].endswith(
        "cartpole_sparse.py"
    )


def test_example_fields_fitness_and_success_on_real_episodes() -> None:
    adapter = load_task(task_file=CARTPOLE)
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    obs, info = env.reset(seed=0)
    assert [info[STATE_KEY][n] for n in adapter.schema.names] == obs.astype(np.float64).tolist()
    episodes = rollout_episodes(adapter, random_policy(adapter, 0), 3, seed=0)
    for episode in episodes:
        assert adapter.fitness(episode) == episode.length
        assert adapter.success(episode) is False  # random play never lasts 500 steps


def test_mujoco_example_has_vector_fields_and_reward_files() -> None:
    adapter = load_task(task_file=EXAMPLES / "reacher_task.toml")
    assert adapter.schema["fingertip_to_target"].shape == (2,)
    human = adapter.reward_source("human")
    sparse = adapter.reward_source("sparse")
    assert human is not None and "fingertip_to_target" in human
    assert sparse is not None and "compute_reward" in sparse
    episode = rollout_episodes(adapter, random_policy(adapter, 0), 1, seed=0)[0]
    assert adapter.fitness(episode) == pytest.approx(episode.env_rewards.sum())
    assert adapter.success(episode) == (adapter.fitness(episode) >= -3.75)


def test_swimmer_example_scores_distance_and_its_sparse_reward_pays_only_for_it(
    tmp_path: Path,
) -> None:
    """Swimmer-v5 (MuJoCo, no early end): fitness is the forward distance, read from `info`; the
    sparse reward pays +1 per half-metre mark crossed forward, so its sum is the distance gained
    in half metres."""
    adapter = load_task(task_file=EXAMPLES / "swimmer_task.toml")
    assert adapter.reward_source("human") is None  # the environment's own reward is the baseline
    sparse = adapter.reward_source("sparse")
    assert sparse is not None
    (tmp_path / "sparse.py").write_text(sparse)
    reward = load_reward(tmp_path / "sparse.py")
    episode = rollout_episodes(adapter, random_policy(adapter, 0), 1, seed=0)[0]
    assert episode.length == 1000 and episode.truncated and not episode.terminated
    x = episode.states["x_position"]
    assert adapter.fitness(episode) == pytest.approx(x[-1] - x[0])
    assert adapter.success(episode) is False  # 14.4 m is far beyond random play
    before = {name: values[:-1] for name, values in episode.states.items()}
    after = {name: values[1:] for name, values in episode.states.items()}
    total, components = call_reward(reward, before, episode.actions, after, 0, "sparse.py")
    assert set(np.unique(total)) <= {-1.0, 0.0, 1.0} and np.count_nonzero(total) < 50
    assert total.sum() == np.floor(2 * x[-1]) - np.floor(2 * x[0])
    assert list(components) == ["half_metre_marks"]


def test_reward_paths_resolve_from_the_task_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "rewards").mkdir()
    (tmp_path / "rewards" / "mine.py").write_text("# human\n")
    path = write(tmp_path, MINIMAL.replace("goal =", 'human_reward = "rewards/mine.py"\ngoal ='))
    monkeypatch.chdir(tmp_path.parent)  # not where the task file is
    adapter = load_task_file(path)
    assert adapter.reward_source("human") == "# human\n"
    assert adapter.reward_source("sparse") is None


def test_a_copy_without_its_reward_files_still_loads(tmp_path: Path) -> None:
    """The worker reloads a bare copy (job/task.toml); rewards are resolved by the orchestrator."""
    job = tmp_path / "job"
    job.mkdir()
    shutil.copyfile(EXAMPLES / "reacher_task.toml", job / "task.toml")
    adapter = load_task_file(job / "task.toml")
    assert adapter.id == "reacher"
    with pytest.raises(TaskFileError, match="human_reward"):
        adapter.reward_source("human")


def test_id_defaults_to_the_file_name(tmp_path: Path) -> None:
    assert load_task_file(write(tmp_path, MINIMAL, "my_pole.toml")).id == "my_pole"


def episode(
    values: list[float], rewards: list[float], terminated: bool = False, truncated: bool = False
) -> Episode:
    return Episode(
        states={"height": np.asarray(values)},
        actions=np.zeros(len(rewards)),
        env_rewards=np.asarray(rewards),
        terminated=terminated,
        truncated=truncated,
    )


FIELD_HEIGHT = """
[fields.height]
index = 0
description = "height"
"""


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("episode_length", 3.0),
        ("episode_return", 6.0),
        ("final_minus_initial", 4.0),
        ("max", 7.0),
        ("mean", 4.0),  # over the states after each step: (2 + 7 + 3) / 3
        ("final", 3.0),
    ],
)
def test_fitness_kinds(kind: str, expected: float, tmp_path: Path) -> None:
    field = "" if kind.startswith("episode") else 'field = "height"'
    text = (
        f'env_id = "CartPole-v1"\ngoal = "g"\n{FIELD_HEIGHT}\n[fitness]\nkind = "{kind}"\n{field}\n'
    )
    adapter = load_task_file(write(tmp_path, text))
    assert adapter.fitness(episode([-1.0, 2.0, 7.0, 3.0], [1.0, 2.0, 3.0])) == expected
    assert adapter.success(episode([0.0, 1.0], [1.0])) is None
    assert adapter.fitness_description


@pytest.mark.parametrize(
    ("success", "terminated", "truncated", "expected"),
    [
        ('kind = "truncated"', False, True, True),
        ('kind = "truncated"', True, True, False),
        ('kind = "terminated"', True, False, True),
        ('kind = "terminated"', False, True, False),
        ('kind = "fitness_at_least"\nthreshold = 2', False, True, True),
        ('kind = "fitness_at_least"\nthreshold = 2.5', False, True, False),
    ],
)
def test_success_kinds(
    success: str, terminated: bool, truncated: bool, expected: bool, tmp_path: Path
) -> None:
    text = MINIMAL + f"\n[success]\n{success}\n"
    adapter = load_task_file(write(tmp_path, text))
    assert adapter.success(episode([0.0, 0.0, 0.0], [1.0, 1.0], terminated, truncated)) is expected
    assert adapter.success_description


def test_info_key_fields_read_the_step_info(tmp_path: Path) -> None:
    text = """
    env_id = "HalfCheetah-v5"
    goal = "Run forward."

    [fields.forward_velocity]
    info_key = "x_velocity"
    description = "forward velocity the env rewarded"
    units = "m/s"

    [fields.joints]
    indices = [2, 3, 4]
    description = "back thigh, shin and foot angles"

    [fitness]
    kind = "mean"
    field = "forward_velocity"
    """
    adapter = load_task_file(write(tmp_path, text))
    assert adapter.schema["joints"].shape == (3,)
    env = StateFieldsWrapper(adapter.make_env(), adapter)
    _obs, info = env.reset(seed=0)
    assert info[STATE_KEY]["forward_velocity"] == 0.0  # reset info has no velocity: the default
    obs, _r, _te, _tr, info = env.step(env.action_space.sample())
    assert info[STATE_KEY]["forward_velocity"] == info["x_velocity"]
    np.testing.assert_array_equal(info[STATE_KEY]["joints"], obs[2:5])


def test_training_table_and_per_algorithm_hyperparameters(tmp_path: Path) -> None:
    text = (
        MINIMAL
        + """
    [training]
    algo = "sac"
    steps = 5000
    n_envs = 2
    normalize_obs = true
    eval_seeds = 5

    [training.hyperparams]
    learning_rate = 0.001

    [training.hyperparams.ppo]
    n_steps = 64
    """
    )
    training = load_task_file(write(tmp_path, text)).training
    assert (training.algo, training.steps, training.n_envs, training.normalize_obs) == (
        "sac",
        5000,
        2,
        True,
    )
    assert training.hyperparams == {"sac": {"learning_rate": 0.001}, "ppo": {"n_steps": 64}}
    assert training.eval_seeds == 5
    assert load_task_file(write(tmp_path, MINIMAL)).training.eval_seeds == 2  # the default


def test_sac_steps_one_environment_unless_the_file_says(tmp_path: Path) -> None:
    """SAC keeps a task file's `n_envs`, so its default must stay one, not PPO's eight."""
    sac = MINIMAL + '\n[training]\nalgo = "sac"\n'
    assert load_task_file(write(tmp_path, sac)).training.n_envs == 1
    assert load_task_file(write(tmp_path, MINIMAL)).training.n_envs == 8  # PPO's default


def replace_in(base: str, old: str, new: str) -> str:
    assert old in base
    return base.replace(old, new)


# (task file text, the key the error must name, a phrase saying what is wrong or what to do)
ERRORS = {
    "syntax": ("env_id = CartPole-v1\n", "(syntax)", "not valid TOML"),
    "unknown top-level key": ('gaol = "x"\n' + MINIMAL, "gaol", "did you mean 'goal'"),
    "missing env_id": (replace_in(MINIMAL, 'env_id = "CartPole-v1"', ""), "env_id", "missing"),
    "unknown env id": (replace_in(MINIMAL, "CartPole-v1", "CartPol-v1"), "env_id", "'CartPole-v1'"),
    "missing goal": (replace_in(MINIMAL, 'goal = "Keep the pole up."', ""), "goal", "missing"),
    "empty goal": (replace_in(MINIMAL, "Keep the pole up.", " "), "goal", "non-empty string"),
    "bad id": (MINIMAL.replace("goal =", 'id = "my task!"\ngoal ='), "id", "letters, digits"),
    "bad make_kwargs": (
        MINIMAL.replace("goal =", "make_kwargs = { gravity = 3 }\ngoal ="),
        "make_kwargs",
        "rejected",
    ),
    "no fields": (
        MINIMAL.split("[fields")[0] + '[fitness]\nkind = "episode_length"\n',
        "fields",
        "at least one",
    ),
    "index out of range": (
        replace_in(MINIMAL, "index = 2", "index = 4"),
        "fields.pole_angle.index",
        "0 to 3",
    ),
    "negative index": (
        replace_in(MINIMAL, "index = 2", "index = -1"),
        "fields.pole_angle.index",
        "out of range",
    ),
    "index not an int": (
        replace_in(MINIMAL, "index = 2", 'index = "2"'),
        "fields.pole_angle.index",
        "integer",
    ),
    "indices out of range": (
        replace_in(MINIMAL, "index = 2", "indices = [1, 9]"),
        "fields.pole_angle.indices",
        "out of range",
    ),
    "empty indices": (
        replace_in(MINIMAL, "index = 2", "indices = []"),
        "fields.pole_angle.indices",
        "non-empty",
    ),
    "two sources": (
        replace_in(MINIMAL, "index = 2", 'index = 2\ninfo_key = "x"'),
        "fields.pole_angle",
        "exactly one of",
    ),
    "no source": (replace_in(MINIMAL, "index = 2\n", ""), "fields.pole_angle", "exactly one of"),
    "unknown info key": (
        replace_in(MINIMAL, "index = 2", 'info_key = "pole_angle"'),
        "fields.pole_angle.info_key",
        "has no 'pole_angle'",
    ),
    "default without info_key": (
        replace_in(MINIMAL, "index = 2", "index = 2\ndefault = 0.0"),
        "fields.pole_angle.default",
        "only fields with info_key",
    ),
    "field key typo": (
        replace_in(MINIMAL, 'units = "rad"', 'unit = "rad"'),
        "fields.pole_angle.unit",
        "did you mean 'units'",
    ),
    "missing description": (
        replace_in(MINIMAL, 'description = "pole angle from upright"\n', ""),
        "fields.pole_angle.description",
        "missing",
    ),
    "field name not an identifier": (
        replace_in(MINIMAL, "[fields.pole_angle]", '[fields."pole-angle"]'),
        "fields.pole-angle",
        "Python identifier",
    ),
    "field name reserved": (
        replace_in(MINIMAL, "[fields.pole_angle]", "[fields.keys]"),
        "fields.keys",
        "reserved",
    ),
    "missing fitness": (MINIMAL.split("[fitness]")[0], "fitness", "missing"),
    "unknown fitness kind": (
        replace_in(MINIMAL, '"episode_length"', '"episode_lenght"'),
        "fitness.kind",
        "did you mean 'episode_length'",
    ),
    "fitness needs a field": (
        replace_in(MINIMAL, '"episode_length"', '"max"'),
        "fitness.field",
        "missing",
    ),
    "fitness unknown field": (
        replace_in(MINIMAL, 'kind = "episode_length"', 'kind = "max"\nfield = "speed"'),
        "fitness.field",
        "no state field 'speed'",
    ),
    "fitness vector field": (
        replace_in(
            replace_in(MINIMAL, "index = 2", "indices = [2, 3]"),
            'kind = "episode_length"',
            'kind = "final"\nfield = "pole_angle"',
        ),
        "fitness.field",
        "vector field",
    ),
    "fitness field not used": (
        replace_in(
            MINIMAL, 'kind = "episode_length"', 'kind = "episode_length"\nfield = "pole_angle"'
        ),
        "fitness.field",
        "remove it",
    ),
    "unknown success kind": (
        MINIMAL + '[success]\nkind = "landed"\n',
        "success.kind",
        "choose one of",
    ),
    "threshold missing": (
        MINIMAL + '[success]\nkind = "fitness_at_least"\n',
        "success.threshold",
        "missing",
    ),
    "threshold not used": (
        MINIMAL + '[success]\nkind = "truncated"\nthreshold = 3\n',
        "success.threshold",
        "remove it",
    ),
    "unknown algo": (MINIMAL + '[training]\nalgo = "dqn"\n', "training.algo", "ppo, sac"),
    "bad steps": (MINIMAL + "[training]\nsteps = -5\n", "training.steps", "positive integer"),
    "bad normalize_obs": (
        MINIMAL + '[training]\nnormalize_obs = "yes"\n',
        "training.normalize_obs",
        "true or false",
    ),
    "unknown hyperparameter": (
        MINIMAL + "[training.hyperparams]\nlearnig_rate = 0.1\n",
        "training.hyperparams.learnig_rate",
        "did you mean 'learning_rate'",
    ),
    "reserved hyperparameter": (
        MINIMAL + "[training.hyperparams]\nseed = 3\n",
        "training.hyperparams.seed",
        "PPO",
    ),
}


@pytest.mark.parametrize("case", ERRORS)
def test_every_mistake_names_the_file_and_key(case: str, tmp_path: Path) -> None:
    text, key, phrase = ERRORS[case]
    path = write(tmp_path, text)
    with pytest.raises(ValueError) as caught:
        load_task(task_file=path)
    error = caught.value
    assert isinstance(error, TaskFileError)
    assert error.key == key, str(error)
    assert str(path.resolve()) in str(error)
    assert phrase in str(error), str(error)


def test_missing_task_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_task_file(tmp_path / "nope.toml")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "task.toml"
    path.write_bytes(b"\xff\xfe goal")
    with pytest.raises(TaskFileError, match="UTF-8"):
        load_task_file(path)


def test_non_box_observation_reads_info_fields_per_environment(tmp_path: Path) -> None:
    """FrozenLake's observation is a Discrete cell: no indices, but info values work."""
    text = """
    env_id = "FrozenLake-v1"
    goal = "Cross the frozen lake to the goal without falling into a hole."

    [fields.transition_probability]
    info_key = "prob"
    default = 1.0
    description = "probability of the slippery move just taken"

    [fitness]
    kind = "episode_return"
    """
    adapter = load_task_file(write(tmp_path, text))
    assert adapter.obs_layout is None  # a Discrete observation cannot be stacked and sliced
    venv = make_vec_env(adapter, 2, seed=0)
    obs = venv.reset()
    assert venv.state_after_reset(obs).as_dict() == {
        "transition_probability": pytest.approx([1.0, 1.0])
    }
    obs, _rewards, dones, infos = venv.step(np.array([1, 2]))
    reached, _start = venv.states_after_step(obs, dones, infos)
    assert reached.as_dict() == {
        "transition_probability": pytest.approx([info["prob"] for info in infos])
    }
    bad = text.replace('info_key = "prob"\n    default = 1.0', "index = 0")
    with pytest.raises(TaskFileError, match="not a flat Box"):
        load_task_file(write(tmp_path, bad, "bad.toml"))
