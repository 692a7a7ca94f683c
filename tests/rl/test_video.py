"""Rollout videos: real episodes rendered to MP4, decoded back, and every way to have no video."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.rl.video import (
    QUIET_SDL,
    VideoLimits,
    VideoResult,
    record_episode,
    rendering_status,
    select_gl_backend,
)
from rewardsmith.sandbox.video_file import check_video

ODD_ENV_ID = "tests/OddFrames-v0"


class OddFramesEnv(gym.Env[np.ndarray, np.int64]):
    """Renders 101x75 frames at 5 fps: odd sides and a frame rate below the floor."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 5}  # noqa: RUF012

    def __init__(self, render_mode: str | None = None, frame_shape: tuple[int, ...] = (101, 75, 3)):
        self.render_mode = render_mode
        self.frame_shape = frame_shape
        self.observation_space = gym.spaces.Box(0.0, 100.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> Any:
        self.t += 1
        return np.full(1, self.t, np.float32), 0.0, self.t >= 12, False, {}

    def render(self) -> Any:
        return np.full(self.frame_shape, (self.t * 20) % 256, np.uint8)


def make_odd_frames(**kwargs: Any) -> gym.Env[np.ndarray, np.int64]:
    return OddFramesEnv(**kwargs)


if ODD_ENV_ID not in gym.registry:
    gym.register(ODD_ENV_ID, entry_point=make_odd_frames)


class OddFramesTask(TaskAdapter):
    """Just enough of an adapter for `record_episode`: an env id and its arguments."""

    id = "odd-frames"
    env_id = ODD_ENV_ID


@pytest.fixture(autouse=True)
def render_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Set what `record_episode` would set in the evaluator, but undone after each test."""
    for key, value in {**QUIET_SDL, **select_gl_backend(os.environ)}.items():
        monkeypatch.setenv(key, os.environ.get(key, value))


def random_policy(n_actions: int, seed: int = 0) -> Callable[[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    return lambda obs: rng.integers(0, n_actions, size=(len(obs),))


def balancing_policy(obs: np.ndarray) -> np.ndarray:
    """Push the cart toward where the pole leans: CartPole stays up for hundreds of steps."""
    return (obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64)


def episode_length(adapter: TaskAdapter, policy: Callable[[np.ndarray], Any], seed: int) -> int:
    env = adapter.make_env()
    obs, _ = env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        obs, _, terminated, truncated, _ = env.step(np.asarray(policy(obs[None]))[0])
        steps, done = steps + 1, terminated or truncated
    env.close()
    return steps


def decoded(path: Path) -> np.ndarray:
    """Every frame of the MP4, decoded by ffmpeg (imageio-ffmpeg), as (frames, h, w, 3)."""
    return iio.imread(path, plugin="FFMPEG", index=None)


def assert_only(folder: Path, names: set[str]) -> None:
    """No stray temp files: the folder holds exactly `names`."""
    assert {p.name for p in folder.iterdir()} == names


def test_cartpole_episode_is_recorded_frame_for_frame(tmp_path: Path) -> None:
    adapter = load_task("cartpole")
    steps = episode_length(adapter, random_policy(2), seed=3)
    out = tmp_path / "cartpole.mp4"

    result = record_episode(adapter, random_policy(2), 3, out)

    assert result == VideoResult(out, steps + 1, None, False)
    assert check_video(out, VideoLimits().max_bytes) is None
    frames = decoded(out)
    # 400x600 is over max_side 480: every second pixel, 200x300.
    assert frames.shape == (steps + 1, 200, 300, 3)
    assert frames.std() > 0  # a picture, not a blank
    assert_only(tmp_path, {"cartpole.mp4"})


def test_lunarlander_renders_through_pygame_at_every_second_pixel(tmp_path: Path) -> None:
    adapter = load_task("lunarlander")
    assert adapter.env_id == "LunarLander-v3"
    steps = episode_length(adapter, random_policy(4), seed=1)
    frames_cap = VideoLimits().max_frames
    out = tmp_path / "lander.mp4"

    result = record_episode(adapter, random_policy(4), 1, out)

    expected = min(steps + 1, frames_cap)
    assert result == VideoResult(out, expected, None, steps + 1 > frames_cap)
    assert check_video(out, VideoLimits().max_bytes) is None
    frames = decoded(out)
    # Box2D draws through pygame at 600x400, over max_side 480: every second pixel, 300x200.
    assert frames.shape == (expected, 200, 300, 3)
    assert frames.std() > 0  # the moon and the lander, not a blank
    assert_only(tmp_path, {"lander.mp4"})


def test_frame_cap_truncates_a_long_episode(tmp_path: Path) -> None:
    out = tmp_path / "capped.mp4"

    result = record_episode(
        load_task("cartpole"), balancing_policy, 0, out, VideoLimits(max_frames=40)
    )

    assert (result.path, result.frames, result.truncated) == (out, 40, True)
    assert decoded(out).shape[0] == 40


def test_time_cap_truncates(tmp_path: Path) -> None:
    out = tmp_path / "brief.mp4"

    result = record_episode(
        load_task("cartpole"), balancing_policy, 0, out, VideoLimits(max_seconds=1e-9)
    )

    assert (result.frames, result.truncated) == (1, True)
    assert decoded(out).shape[0] == 1


@pytest.fixture(scope="module")
def mujoco_renders() -> None:
    ok, message = rendering_status()
    if not ok:
        pytest.skip(f"offscreen rendering is impossible on this machine: {message}")


@pytest.mark.usefixtures("mujoco_renders")
def test_halfcheetah_records_through_the_selected_gl_backend(tmp_path: Path) -> None:
    adapter = load_task("halfcheetah")
    space = adapter.make_env().action_space
    assert isinstance(space, gym.spaces.Box)
    rng = np.random.default_rng(0)
    out = tmp_path / "cheetah.mp4"

    def policy(obs: np.ndarray) -> np.ndarray:
        return rng.uniform(space.low, space.high, size=(len(obs), *space.shape))

    result = record_episode(adapter, policy, 0, out, VideoLimits(max_frames=30))

    assert result == VideoResult(out, 30, None, True)  # its episodes last 1000 steps
    assert check_video(out, VideoLimits().max_bytes) is None
    frames = decoded(out)
    assert frames.shape == (30, 480, 480, 3)
    assert np.abs(frames[-1].astype(int) - frames[0]).mean() > 0.5  # the cheetah moved


def test_rendering_status_names_the_backend() -> None:
    ok, message = rendering_status()

    backend = select_gl_backend(os.environ).get("MUJOCO_GL")
    assert "\n" not in message
    assert (f"MUJOCO_GL={backend}" if backend else "no GL backend found") in message
    if ok:
        assert "can be rendered" in message
    else:
        assert "install" in message


def test_env_without_render_modes_gives_a_reason_not_an_error(tmp_path: Path) -> None:
    out = tmp_path / "line.mp4"

    result = record_episode(load_task("line"), random_policy(3), 0, out)

    assert result.path is None and result.frames == 0
    assert result.reason == "rewardsmith/Line-v0 cannot render frames"
    assert_only(tmp_path, set())


def test_video_over_the_byte_cap_is_deleted(tmp_path: Path) -> None:
    out = tmp_path / "big.mp4"

    result = record_episode(
        load_task("cartpole"), random_policy(2), 0, out, VideoLimits(max_bytes=1000)
    )

    assert result.path is None
    assert result.reason is not None and result.reason.startswith("video larger than the cap")
    assert_only(tmp_path, set())


def test_odd_frames_are_cropped_even_and_fps_is_clipped(tmp_path: Path) -> None:
    out = tmp_path / "odd.mp4"

    result = record_episode(OddFramesTask(), random_policy(2), 0, out)

    assert result == VideoResult(out, 13, None, False)
    assert decoded(out).shape == (13, 100, 74, 3)
    assert iio.immeta(out, plugin="FFMPEG")["fps"] == 10


def test_large_frames_are_strided_below_max_side(tmp_path: Path) -> None:
    out = tmp_path / "strided.mp4"

    result = record_episode(OddFramesTask(), random_policy(2), 0, out, VideoLimits(max_side=30))

    assert result.frames == 13
    # ceil(101 / 30) = 4: rows 0, 4, ..., 100 (26) and columns 0..72 (19), cropped to even.
    assert decoded(out).shape == (13, 26, 18, 3)


@pytest.mark.filterwarnings("ignore:.*RGB-array rendering should return")
@pytest.mark.parametrize(
    ("make_kwargs", "reason"),
    [
        ({"frame_shape": (8, 8)}, "render() returned uint8 (8, 8), not an RGB image"),
        ({"frame_shape": (1, 40, 3)}, "render() returned a 1x40 frame, too small"),
        ({"no_such_argument": 1}, "cannot build tests/OddFrames-v0 for rendering: TypeError"),
    ],
)
def test_bad_environments_give_reasons(
    tmp_path: Path, make_kwargs: dict[str, Any], reason: str
) -> None:
    task = OddFramesTask()
    task.make_kwargs = make_kwargs

    result = record_episode(task, random_policy(2), 0, tmp_path / "bad.mp4")

    assert result.path is None and result.reason is not None
    assert result.reason.startswith(reason)
    assert_only(tmp_path, set())


def test_a_failing_policy_gives_a_reason(tmp_path: Path) -> None:
    def policy(obs: np.ndarray) -> np.ndarray:
        raise RuntimeError("policy exploded\nwith a traceback")

    result = record_episode(load_task("cartpole"), policy, 0, tmp_path / "x.mp4")

    assert result.path is None
    assert result.reason == "the policy failed: RuntimeError: policy exploded"
    assert_only(tmp_path, set())


def test_gl_backend_selection() -> None:
    assert select_gl_backend({"MUJOCO_GL": "osmesa"}) == {
        "MUJOCO_GL": "osmesa",
        "PYOPENGL_PLATFORM": "osmesa",
    }
    assert select_gl_backend({"MUJOCO_GL": "glfw"}) == {"MUJOCO_GL": "glfw"}
    assert select_gl_backend({"PYOPENGL_PLATFORM": "egl"}) == {
        "MUJOCO_GL": "egl",
        "PYOPENGL_PLATFORM": "egl",
    }
    chosen = select_gl_backend({})
    assert chosen in (
        {},
        {"MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl"},
        {"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"},
    )


# --- keyframes: the stills the video judge sees (made here, in the sandbox) ---------------------


def test_keyframes_are_evenly_spaced_full_resolution_stills_with_their_times(
    tmp_path: Path,
) -> None:
    result = record_episode(OddFramesTask(), random_policy(2), 0, tmp_path / "odd.mp4")

    keyframes = result.keyframes
    assert keyframes is not None
    # 13 frames, 8 stills: indices round(linspace(0, 12, 8)); frame t is filled with 20 * t.
    picked = [0, 2, 3, 5, 7, 9, 10, 12]
    assert keyframes.frames.dtype == np.uint8
    assert keyframes.frames.shape == (8, 101, 75, 3)  # from the rendered frame, not the video's
    assert [int(f[0, 0, 0]) for f in keyframes.frames] == [20 * i for i in picked]
    np.testing.assert_allclose(keyframes.seconds, [i / 10 for i in picked])  # 10 fps


def test_keyframes_of_a_long_episode_stay_few_small_and_reach_its_end(tmp_path: Path) -> None:
    limits = VideoLimits(max_frames=400, keyframes=6)
    result = record_episode(load_task("cartpole"), balancing_policy, 0, tmp_path / "c.mp4", limits)

    keyframes = result.keyframes
    assert result.frames == 400 and keyframes is not None
    # 400x600 strided by 3 (the smallest integer stride under 256 px): 134x200.
    assert keyframes.frames.shape == (6, 134, 200, 3)
    seconds = keyframes.seconds
    assert seconds[0] == 0.0 and seconds[-1] == pytest.approx(399 / 50)  # CartPole: 50 fps
    gaps = np.diff(seconds)
    assert gaps.min() > 0 and gaps.max() < 1.6 * gaps.min()  # evenly spread over the episode


def test_keyframe_side_is_its_own_cap(tmp_path: Path) -> None:
    limits = VideoLimits(keyframes=3, keyframe_side=30)
    result = record_episode(OddFramesTask(), random_policy(2), 0, tmp_path / "o.mp4", limits)

    assert result.keyframes is not None
    assert result.keyframes.frames.shape == (3, 26, 19, 3)  # ceil(101 / 30) = 4


def test_no_video_has_no_keyframes(tmp_path: Path) -> None:
    result = record_episode(load_task("line"), random_policy(3), 0, tmp_path / "line.mp4")

    assert result.keyframes is None
