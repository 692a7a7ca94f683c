"""The video program through the real process sandbox: a trained policy filmed and kept as a
checked MP4, a task that cannot render answered with a reason, and no scratch left behind."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.jobs.video import record_video
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Sandbox
from rewardsmith.sandbox.video_file import check_video


def _trained(task_id: str, folder: Path, steps: int = 1024) -> tuple[TaskAdapter, TrainJob]:
    adapter = load_task(task_id)
    job = make_job(adapter, steps=steps, seed=3)
    outcome = train_reward(adapter, job, adapter.reward_source("human"), folder, ProcessSandbox())
    assert outcome.ok, outcome.error
    return adapter, job


@pytest.mark.slow
def test_a_trained_cartpole_policy_is_filmed_and_kept_as_a_checked_mp4(
    tmp_path: Path, sandbox: Sandbox
) -> None:
    """On every backend: bubblewrap, Landlock alone, Docker (the slow tier runs the last two)."""
    adapter, job = _trained("cartpole", tmp_path)
    dest, stills = tmp_path / "rollout.mp4", tmp_path / "keyframes.npz"
    outcome = record_video(adapter, job, tmp_path, dest, sandbox, keyframes_dest=stills)
    assert outcome.reason is None and outcome.path == dest
    assert check_video(dest, 8 * 1024 * 1024) is None
    # The stills the video judge sees, made in the sandbox, checked and written again here.
    assert outcome.keyframes_reason is None
    with np.load(stills, allow_pickle=False) as kept:
        stilled, seconds = kept["frames"], kept["seconds"]
    assert outcome.keyframes == len(stilled) == min(8, outcome.frames)
    assert stilled.dtype == np.uint8 and stilled.shape[1:] == (134, 200, 3)  # 400x600 / 3
    assert seconds[0] == 0.0 and seconds[-1] == (outcome.frames - 1) / 50  # CartPole: 50 fps
    frames = iio.imread(dest, index=None)
    # One frame after reset and one per step of the evaluation's first episode (capped at 400).
    assert len(frames) == outcome.frames and 2 <= outcome.frames <= 400
    assert frames.shape[1:] == (200, 300, 3)  # CartPole's 400x600 at every second pixel
    assert not (tmp_path / "video").exists()  # the program's folder is scratch


def test_a_task_that_cannot_render_gets_a_reason_and_no_file(tmp_path: Path) -> None:
    adapter, job = _trained("line", tmp_path, steps=256)
    dest = tmp_path / "rollout.mp4"
    outcome = record_video(adapter, job, tmp_path, dest, ProcessSandbox())
    assert outcome.path is None and outcome.reason is not None
    assert "cannot render" in outcome.reason
    assert not dest.exists() and not (tmp_path / "video").exists()


def test_a_backend_without_a_video_program_says_so(tmp_path: Path) -> None:
    """sb3 and jax have one each (the JAX one: tests/jobs/test_video_jax.py)."""
    adapter = load_task("cartpole")
    job = make_job(adapter, steps=1024, seed=0)
    job.backend = "torch"
    outcome = record_video(adapter, job, tmp_path, tmp_path / "v.mp4", ProcessSandbox())
    assert outcome.path is None and outcome.reason is not None and "'torch'" in outcome.reason
    assert not (tmp_path / "video").exists()


@pytest.mark.slow
def test_a_trained_halfcheetah_policy_renders_headless_through_mujoco(tmp_path: Path) -> None:
    adapter, job = _trained("halfcheetah", tmp_path, steps=1024)
    dest = tmp_path / "rollout.mp4"
    outcome = record_video(adapter, job, tmp_path, dest, ProcessSandbox())
    assert outcome.reason is None, outcome.reason
    frames = iio.imread(dest, index=None)
    assert len(frames) == outcome.frames == 400  # 1000 steps, capped
    assert frames.std() > 10  # a rendered scene, not a blank frame
