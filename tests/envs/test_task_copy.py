"""A run's copy of its task file: reward files travel with it, and the copy outlives the original."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from rewardsmith.envs.task_copy import TASK_COPY, copy_task
from rewardsmith.envs.task_file import load_task_file
from rewardsmith.envs.toml_write import dumps

EXAMPLES = Path(__file__).resolve().parents[2] / "rewardsmith" / "envs" / "examples"


def test_written_toml_reads_back_as_the_same_data() -> None:
    data = {
        "env_id": "CartPole-v1",
        "goal": 'say "hi"\nthen\ttab \\ and ünïcode \x7f',
        "make_kwargs": {"max_episode_steps": 200, "render_mode": "rgb_array"},
        "odd key": [1, 2.5, -3e-05, True],
        "fields": {"x": {"index": 0, "description": "d"}, "v-y": {"indices": [1, 2]}},
        "training": {"steps": 10, "hyperparams": {"learning_rate": "lin_0.001", "ppo": {}}},
        "inline": [{"a": 1}, {"b": "c"}],
    }
    assert tomllib.loads(dumps(data)) == data


def _task_with_rewards(folder: Path) -> Path:
    """The reacher example with its reward files in a sub-folder and one beside its parent."""
    (folder / "task" / "rewards").mkdir(parents=True)
    shutil.copy(EXAMPLES / "reacher_human.py", folder / "task" / "rewards" / "human.py")
    shutil.copy(EXAMPLES / "reacher_sparse.py", folder / "sparse.py")
    text = (EXAMPLES / "reacher_task.toml").read_text()
    text = text.replace('"reacher_human.py"', '"rewards/human.py"')
    text = text.replace('"reacher_sparse.py"', '"../sparse.py"')
    path = folder / "task" / "reacher.toml"
    path.write_text(text)
    return path


def test_the_copy_keeps_its_reward_files_after_the_original_folder_is_gone(
    tmp_path: Path,
) -> None:
    original = _task_with_rewards(tmp_path / "mine")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    copy = copy_task(original, run_dir)
    shutil.rmtree(tmp_path / "mine")
    task = load_task_file(copy)
    assert copy == run_dir / TASK_COPY and task.id == "reacher"
    assert task.reward_source("human") == (EXAMPLES / "reacher_human.py").read_text()
    assert task.reward_source("sparse") == (EXAMPLES / "reacher_sparse.py").read_text()
    assert task.describe()["human_reward"] == str(run_dir / "human_reward.py")
    # A copy of the copy (as `replay --rerun` makes) works the same way.
    again = tmp_path / "rerun"
    again.mkdir()
    assert load_task_file(copy_task(copy, again)).reward_source("sparse") is not None


def test_a_task_file_without_reward_files_is_copied_byte_for_byte(tmp_path: Path) -> None:
    text = (EXAMPLES / "cartpole_task.toml").read_text()
    source = tmp_path / "t.toml"
    source.write_text(text.replace('sparse_reward = "cartpole_sparse.py"', ""))
    (tmp_path / "run").mkdir()
    copy = copy_task(source, tmp_path / "run")
    assert copy.read_text() == source.read_text()


def test_a_missing_reward_file_is_named(tmp_path: Path) -> None:
    source = tmp_path / "t.toml"
    source.write_text((EXAMPLES / "cartpole_task.toml").read_text())
    (tmp_path / "run").mkdir()
    with pytest.raises(
        FileNotFoundError, match=r"sparse_reward: reward file .*cartpole_sparse\.py"
    ):
        copy_task(source, tmp_path / "run")
