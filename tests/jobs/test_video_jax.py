"""The JAX backend's video program through the real process sandbox: a policy trained on JAX is
filmed in its own JAX environment (the evaluator's first episode, frame for frame) and kept as a
checked MP4 with its stills; an MJX task is drawn by MuJoCo from the MJX states.

Tiny budgets; most of each test's time is XLA compiling the training, the evaluation and the
episode on CPU (two cores: ~50 s for CartPole, ~60 s to film HalfCheetah)."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from rewardsmith import job_spec as files
from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs import compile_store
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.jobs.video import record_video
from rewardsmith.rl.trajectories import load_episodes
from rewardsmith.rl.video import rendering_status
from rewardsmith.runs import layout
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits
from rewardsmith.sandbox.video_file import check_video

pytestmark = pytest.mark.skipif(
    any(find_spec(name) is None for name in ("jax", "gymnax", "brax")),
    reason="the jax extra is not installed: pip install -e '.[jax]'",
)

LIMITS = Limits(wall_s=600)


def _trained_on_jax(task_id: str, folder: Path, steps: int) -> tuple[TaskAdapter, TrainJob]:
    adapter = load_task(task_id)
    job = make_job(adapter, steps=steps, seed=3, backend="jax")
    outcome = train_reward(
        adapter, job, adapter.reward_source("human"), folder, ProcessSandbox(), LIMITS
    )
    assert outcome.ok, f"{outcome.error}\n{(folder / 'worker.log').read_text()[-3000:]}"
    return adapter, job


def _stills(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(path, allow_pickle=False) as kept:
        return kept["frames"], kept["seconds"]


def _first_evaluated_length(candidate_dir: Path) -> int:
    episodes = load_episodes(candidate_dir / layout.EVAL_DIR / files.TRAJECTORIES_FILE)
    return episodes[0][0].length


@pytest.mark.slow
def test_a_jax_cartpole_policy_is_filmed_in_its_own_episode_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pygame", reason="classic-control frames need pygame")
    monkeypatch.setenv(compile_store.CACHE_ENV, str(tmp_path / "cache"))
    adapter, job = _trained_on_jax("cartpole", tmp_path, steps=2048)
    dest, stills = tmp_path / "rollout.mp4", tmp_path / "keyframes.npz"
    store = tmp_path / "cache" / "xla-video" / "cartpole"

    outcome = record_video(adapter, job, tmp_path, dest, ProcessSandbox(), keyframes_dest=stills)
    stored = {p.name: p.stat().st_mtime_ns for p in store.iterdir()}

    assert outcome.reason is None, outcome.reason
    assert outcome.path == dest and check_video(dest, 8 * 1024 * 1024) is None
    # The evaluator's first episode, replayed in gymnax and drawn by Gymnasium's CartPole: one
    # frame after the reset and one per step, up to the termination the evaluator recorded.
    assert outcome.frames == min(_first_evaluated_length(tmp_path) + 1, 400)
    frames = iio.imread(dest, index=None)
    assert frames.shape == (outcome.frames, 200, 300, 3)  # 400x600 at every second pixel
    assert frames.std() > 0
    assert outcome.keyframes_reason is None
    kept, seconds = _stills(stills)
    assert outcome.keyframes == len(kept) == min(8, outcome.frames)
    assert kept.dtype == np.uint8 and kept.shape[1:] == (134, 200, 3)
    assert seconds[0] == 0.0 and seconds[-1] == (outcome.frames - 1) / 50  # CartPole: 50 fps
    assert not (tmp_path / "video").exists()  # the program's folder is scratch

    # The task's next video compiles nothing: the first left its episode's program in the store.
    assert stored, "the first video leaves its compiled programs in the store"
    again = record_video(adapter, job, tmp_path, tmp_path / "again.mp4", ProcessSandbox())
    assert again.reason is None and again.frames == outcome.frames, again.reason
    assert {p.name: p.stat().st_mtime_ns for p in store.iterdir()} == stored
    np.testing.assert_array_equal(iio.imread(tmp_path / "again.mp4", index=None), frames)


# Run in a child process: this one stays free of JAX (it forks the sandboxed programs).
_INITIAL_PARAMS = """
import sys
from pathlib import Path
import jax
from rewardsmith.job_spec import TrainJob
from rewardsmith.rl.jax.policy import PARAMS_FILE, config_from_job, make_policy_fn, save_params
from rewardsmith.rl.jax.tasks import jax_task
job_dir = Path(sys.argv[1])
job = TrainJob.read(job_dir)
env = jax_task(job.task_id).make_batch_env()
config = config_from_job(job.hyperparams)
_, initial = make_policy_fn(config, env.observation_size, env.action_size)
save_params(jax.tree_util.tree_map(jax.numpy.asarray, initial), job_dir / PARAMS_FILE)
"""


def _untrained_on_jax(task_id: str, candidate_dir: Path) -> tuple[TaskAdapter, TrainJob]:
    """A candidate folder as a JAX training leaves it, with the network's initial parameters
    (training HalfCheetah on MJX, even for one update, costs minutes of compiling here)."""
    adapter = load_task(task_id)
    job = make_job(adapter, steps=None, seed=3, backend="jax")
    job_dir = candidate_dir / layout.JOB_DIR
    job_dir.mkdir(parents=True)
    job.write(job_dir)
    subprocess.run([sys.executable, "-c", _INITIAL_PARAMS, str(job_dir)], check=True, timeout=300)
    return adapter, job


@pytest.mark.slow
@pytest.mark.mjx
def test_a_halfcheetah_policy_on_mjx_is_filmed_from_its_mjx_states(tmp_path: Path) -> None:
    ok, message = rendering_status()
    if not ok:
        pytest.skip(f"offscreen rendering is impossible on this machine: {message}")
    adapter, job = _untrained_on_jax("halfcheetah", tmp_path)
    dest, stills = tmp_path / "rollout.mp4", tmp_path / "keyframes.npz"

    outcome = record_video(adapter, job, tmp_path, dest, ProcessSandbox(), keyframes_dest=stills)

    assert outcome.reason is None, outcome.reason
    assert check_video(dest, 8 * 1024 * 1024) is None
    frames = iio.imread(dest, index=None)
    assert len(frames) == outcome.frames == 400  # 1000 steps, capped
    assert frames.shape[1:] == (480, 480, 3)  # the renderer's size, within VideoLimits.max_side
    assert frames.std() > 10  # a rendered scene, not a blank frame
    kept, seconds = _stills(stills)
    assert outcome.keyframes == len(kept) == 8 and kept.shape[1:] == (240, 240, 3)
    assert seconds[0] == 0.0 and seconds[-1] == pytest.approx(399 / 20)  # a frame per 0.05 s step
    assert not (tmp_path / "video").exists()
