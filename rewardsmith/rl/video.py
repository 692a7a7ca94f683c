"""Rollout videos: render one evaluation episode of a trained policy to a small MP4.

This runs inside the sandboxed evaluator, so it imports nothing of RewardSmith but the task
adapters. A video is a nice-to-have next to the evaluation's numbers: `record_episode` never
raises, it returns a `VideoResult` whose `reason` says, in one line a user can act on, why there
is no video. Every video program (this SB3 recorder, and the JAX backend's, which draws frames
from the JAX environment's own states) encodes through `encode_frames`. Every frame streams to
an ffmpeg process (imageio-ffmpeg), so memory stays flat; frames, bytes and wall-clock time are
capped (`VideoLimits`). The orchestrator treats the file as
hostile input and checks it with `rewardsmith.sandbox.video_file` before keeping it.

While it records, it also keeps a few evenly spaced stills (`Keyframes`, small by integer
striding) for the video judge: the orchestrator never decodes the MP4 (a decoder is attack
surface), it reads these arrays back through the hostile-file reader instead.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import io
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rewardsmith.envs.adapter import TaskAdapter

Policy = Callable[[np.ndarray], Any]
"""Maps a batch of observations (leading batch dimension 1) to a batch of actions."""

MIB = 1024 * 1024
FPS_RANGE = (10, 60)
NO_OPENGL = (
    "MuJoCo cannot render: no OpenGL; install libegl-mesa0 or libosmesa6 "
    "and set MUJOCO_GL=egl|osmesa"
)
# pygame (classic control) draws rgb_array frames on plain surfaces: it needs no display or sound
# card, but left alone it probes X11/Wayland and ALSA and prints errors on stderr.
QUIET_SDL = {"SDL_VIDEODRIVER": "dummy", "SDL_AUDIODRIVER": "dummy"}
MUJOCO_SHADOW_SIZE = 1024  # MuJoCo models default to 4096; see `_cheapen_mujoco_visuals`
_SIZE_CHECK_EVERY = 30  # frames between looks at the growing file, to stop a runaway early
_REASON_CHARS = 300
_HELD_PER_KEYFRAME = 8  # stills held while recording, per keyframe wanted (memory stays bounded)


@dataclass(frozen=True)
class VideoLimits:
    """Caps on one recording, so a video can never cost the evaluation much time or disk."""

    max_frames: int = 400
    max_bytes: int = 8 * MIB
    max_seconds: float = 60.0
    fps: int = 30
    """Used when the environment's metadata has no `render_fps`."""
    max_side: int = 480
    """Larger frames are downscaled by integer striding (cheap, no resampling library)."""
    keyframes: int = 8
    """Evenly spaced stills kept beside the video (the first and last frame among them)."""
    keyframe_side: int = 256
    """A still's longer side is at most this (integer striding of the rendered frame)."""

    def __post_init__(self) -> None:
        names = ("max_frames", "max_bytes", "max_seconds", "fps", "max_side")
        for name in (*names, "keyframes", "keyframe_side"):
            if getattr(self, name) <= 0:
                raise ValueError(f"VideoLimits.{name} must be positive")


@dataclass(frozen=True)
class Keyframes:
    """Evenly spaced stills of a recorded episode and when each was shown."""

    frames: np.ndarray
    """uint8 [K, H, W, 3], every still the same size."""
    seconds: np.ndarray
    """float64 [K]: each still's time in the video (frame index / frames per second)."""


@dataclass(frozen=True)
class VideoResult:
    """What a recording produced: a file, or no file and the reason why."""

    path: Path | None
    frames: int
    reason: str | None = None
    truncated: bool = False
    """A cap (frames or time) ended the recording before the episode ended."""
    keyframes: Keyframes | None = field(default=None, compare=False)
    """Stills of the recorded episode; None where there is no video."""


class NoVideo(Exception):
    """A recording that cannot go on; its message is the user-facing reason (frame sources
    raise it, `encode_frames` turns it into a `VideoResult` without a file)."""


class _KeyframeKeeper:
    """Keeps every `stride`-th frame as a small copy; whenever it holds `_HELD_PER_KEYFRAME` * K,
    it drops every second one and doubles the stride. So it holds a bounded number of evenly
    spaced stills whatever the episode's length (unknown until it ends), and at the end picks the
    K nearest to evenly spaced times, the first and the last frame among them."""

    def __init__(self, count: int, max_side: int) -> None:
        self.count, self.max_side, self.stride = count, max_side, 1
        self.kept: list[tuple[int, np.ndarray]] = []
        self.last: tuple[int, np.ndarray] | None = None

    def offer(self, index: int, frame: np.ndarray) -> None:
        """Frame `index` of the episode (a checked RGB(A) uint8 image)."""
        small = shrink(frame, self.max_side)
        self.last = (index, small)
        if index % self.stride:
            return
        self.kept.append((index, small))
        if len(self.kept) >= _HELD_PER_KEYFRAME * self.count:
            self.kept, self.stride = self.kept[::2], self.stride * 2

    def pick(self, fps: int) -> Keyframes | None:
        """K stills of those kept, nearest to K evenly spaced times of the episode."""
        pool = list(self.kept)
        if self.last is not None and (not pool or pool[-1][0] != self.last[0]):
            pool.append(self.last)
        if not pool or len({frame.shape for _, frame in pool}) != 1:
            return None
        indices = np.array([index for index, _ in pool])
        targets = np.linspace(0, indices[-1], min(self.count, len(pool)))
        picks = np.unique(np.abs(indices[None, :] - targets[:, None]).argmin(axis=1))
        chosen = [pool[int(i)] for i in picks]
        return Keyframes(
            np.stack([frame for _, frame in chosen]),
            np.array([index / fps for index, _ in chosen], dtype=np.float64),
        )


def shrink(frame: np.ndarray, max_side: int) -> np.ndarray:
    """An RGB copy of `frame` whose longer side is at most `max_side`, by integer striding."""
    step = -(-max(frame.shape[:2]) // max_side)
    return np.array(frame[::step, ::step, :3], dtype=np.uint8)


def keyframes_npz(keyframes: Keyframes) -> bytes:
    """The stills as an `.npz` file's bytes (`frames`, `seconds`; no pickled objects)."""
    buffer = io.BytesIO()
    np.savez(buffer, frames=keyframes.frames, seconds=keyframes.seconds)
    return buffer.getvalue()


def select_gl_backend(env: Mapping[str, str]) -> dict[str, str]:
    """The variables to set before MuJoCo renders offscreen: the user's choice, else EGL, else
    OSMesa, else nothing. PyOpenGL binds its platform on first import, so it must agree."""
    backend = env.get("MUJOCO_GL") or _platform_as_backend(env.get("PYOPENGL_PLATFORM"))
    backend = backend or _find_gl_library()
    if not backend:
        return {}
    chosen = {"MUJOCO_GL": backend}
    platform = env.get("PYOPENGL_PLATFORM") or _platform_as_backend(backend)
    if platform:
        chosen["PYOPENGL_PLATFORM"] = platform
    return chosen


def _platform_as_backend(name: str | None) -> str | None:
    """EGL and OSMesa are named alike by MuJoCo and PyOpenGL; glfw has no PyOpenGL platform."""
    return name if name in ("egl", "osmesa") else None


def _find_gl_library() -> str | None:
    """The headless GL backend whose library the dynamic loader can find, EGL first."""
    if ctypes.util.find_library("EGL"):
        return "egl"
    if ctypes.util.find_library("OSMesa"):
        return "osmesa"
    return None


def prepare_render_environment() -> None:
    """Set, never override, what offscreen rendering reads (before the first frame is drawn)."""
    for key, value in {**QUIET_SDL, **select_gl_backend(os.environ)}.items():
        os.environ.setdefault(key, value)


def record_episode(
    adapter: TaskAdapter,
    policy: Policy,
    seed: int,
    path: Path,
    limits: VideoLimits = VideoLimits(),
) -> VideoResult:
    """Record one episode of `policy` to an MP4 at `path`; never raises, since a missing video
    must not fail the evaluation it illustrates."""
    prepare_render_environment()
    try:
        env = _make_render_env(adapter)
    except Exception as exc:
        return no_video(f"cannot build {adapter.env_id} for rendering: {one_line(exc)}")
    try:
        return _record(env, policy, seed, Path(path), limits)
    except NoVideo as exc:
        return no_video(str(exc))
    except Exception as exc:
        return no_video(f"recording failed: {one_line(exc)}")
    finally:
        _close_quietly(env)


def _make_render_env(adapter: TaskAdapter) -> gym.Env[Any, Any]:
    """The adapter's environment with `render_mode="rgb_array"` on top of its own arguments (its
    suite imported, a goal dictionary flattened as the policy saw it in training)."""
    return adapter.make_env(render_mode="rgb_array")


def _record(
    env: gym.Env[Any, Any], policy: Policy, seed: int, path: Path, limits: VideoLimits
) -> VideoResult:
    """The environment's own frames of one episode, through `encode_frames`."""
    if "rgb_array" not in env.metadata.get("render_modes", ()) or env.render_mode != "rgb_array":
        raise NoVideo(f"{env.spec.id if env.spec else 'the environment'} cannot render frames")
    _cheapen_mujoco_visuals(env)
    return encode_frames(_frames(env, policy, seed, limits), path, _fps(env, limits), limits)


def _cheapen_mujoco_visuals(env: gym.Env[Any, Any]) -> None:
    """See `cheapen_mujoco_model`; only this throwaway render copy of the environment is changed,
    never physics."""
    model = getattr(env.unwrapped, "model", None)
    if model is not None and type(model).__module__.startswith("mujoco"):
        cheapen_mujoco_model(model)


def cheapen_mujoco_model(model: Any) -> None:
    """Smaller shadow map, no multisampling, in a MuJoCo model's visual settings (they change
    no physics): software GL (Mesa llvmpipe, the usual case without a GPU) then draws a frame
    about five times faster, and after H.264 the difference is hard to see."""
    quality = getattr(getattr(model, "vis", None), "quality", None)
    if quality is None:
        return
    quality.shadowsize = min(int(quality.shadowsize), MUJOCO_SHADOW_SIZE)
    if quality.offsamples:
        quality.offsamples = 0


def _frames(
    env: gym.Env[Any, Any], policy: Policy, seed: int, limits: VideoLimits
) -> Generator[np.ndarray, None, bool]:
    """The frame after the reset and after each step, until the episode ends or
    `limits.max_frames` are drawn; returns whether that cap cut the episode short."""
    obs, _ = env.reset(seed=seed)
    yield _render(env)
    for _ in range(limits.max_frames - 1):
        obs, _, terminated, truncated, _ = env.step(_act(policy, obs))
        yield _render(env)
        if terminated or truncated:
            return False
    return True


def _act(policy: Policy, obs: Any) -> Any:
    """The policy's action for one observation (it works on batches: row 0 of a batch of 1)."""
    try:
        return np.asarray(policy(np.asarray(obs)[None]))[0]
    except Exception as exc:
        raise NoVideo(f"the policy failed: {one_line(exc)}") from exc


def _render(env: gym.Env[Any, Any]) -> Any:
    """The current frame; a renderer failure becomes a reason."""
    try:
        frame = env.render()
    except Exception as exc:
        raise NoVideo(_render_failure(env, exc)) from exc
    return frame


def _fit(frame: Any, max_side: int) -> np.ndarray:
    """An RGB uint8 frame no larger than `max_side`, with even sides (what yuv420p needs)."""
    arr = np.asarray(frame)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] not in (3, 4):
        raise NoVideo(f"render() returned {arr.dtype} {arr.shape}, not an RGB image")
    step = -(-max(arr.shape[:2]) // max_side)  # ceil: the smallest stride that fits
    arr = arr[::step, ::step, :3]
    height, width = arr.shape[0] // 2 * 2, arr.shape[1] // 2 * 2
    if height == 0 or width == 0:
        raise NoVideo(f"render() returned a {arr.shape[0]}x{arr.shape[1]} frame, too small")
    return np.ascontiguousarray(arr[:height, :width])


def _fps(env: gym.Env[Any, Any], limits: VideoLimits) -> int:
    """The environment's own frame rate (real-time playback), within `FPS_RANGE`."""
    return playback_fps(env.metadata.get("render_fps"), limits)


def playback_fps(raw: Any, limits: VideoLimits) -> int:
    """A frame rate of `raw` frames per second, within `FPS_RANGE`; `limits.fps` when `raw`
    is not a positive number."""
    if not isinstance(raw, int | float) or isinstance(raw, bool) or not raw > 0:
        return limits.fps
    return round(min(max(float(raw), FPS_RANGE[0]), FPS_RANGE[1]))


def encode_frames(
    frames: Iterable[np.ndarray], path: Path, fps: int, limits: VideoLimits = VideoLimits()
) -> VideoResult:
    """Encode `frames` (RGB(A) uint8 images, any size) to an MP4 at `path`, with the stills for
    the video judge; never raises. Every video program records through here.

    Each frame is checked and strided below `limits.max_side` with even sides, offered full size
    to the keyframe keeper and streamed to ffmpeg through a hidden temp file beside `path`,
    renamed at the end (a reader never sees half a video). At most `limits.max_frames` frames are
    drawn and no new one after `limits.max_seconds`; the file must stay under `limits.max_bytes`.
    A source that is a generator may return True to say it stopped at a cap of its own. A
    `NoVideo` raised by the source is the result's reason; any other failure is reported too."""
    path, source = Path(path), iter(frames)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp.mp4")
    keeper = _KeyframeKeeper(limits.keyframes, limits.keyframe_side)
    try:
        try:
            count, truncated = _encode(source, tmp, fps, limits, keeper)
            _check_size(tmp, limits.max_bytes)
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
            with contextlib.suppress(Exception):
                getattr(source, "close", lambda: None)()  # a generator stopped at a cap
    except NoVideo as exc:
        return no_video(str(exc))
    except Exception as exc:
        return no_video(f"recording failed: {one_line(exc)}")
    return VideoResult(path, count, None, truncated, keeper.pick(fps))


def _encode(
    frames: Iterator[np.ndarray],
    tmp: Path,
    fps: int,
    limits: VideoLimits,
    keeper: _KeyframeKeeper,
) -> tuple[int, bool]:
    """Stream `frames` to ffmpeg (H.264, yuv420p): the number of frames written, and whether a
    cap (the source's own, frames or time) ended them early."""
    writer = _open_writer(tmp, fps)
    count, started = 0, time.monotonic()
    try:
        while True:
            if count and time.monotonic() - started > limits.max_seconds:
                return count, True
            try:
                frame = next(frames)
            except StopIteration as end:
                return count, bool(end.value)
            if count >= limits.max_frames:  # a source with no cap of its own
                return count, True
            fitted = _fit(frame, limits.max_side)
            keeper.offer(count, np.asarray(frame))
            writer.append_data(fitted)
            count += 1
            if count % _SIZE_CHECK_EVERY == 0:
                _check_size(tmp, limits.max_bytes)
    finally:
        writer.close()


def _open_writer(tmp: Path, fps: int) -> Any:
    """An imageio ffmpeg writer; frames already have even sides, so it must not resize them."""
    try:
        import imageio.v2 as iio
        import imageio_ffmpeg  # noqa: F401 - imported only to say clearly when it is missing
    except ImportError as exc:
        raise NoVideo(f"cannot encode video: {exc.name} is not installed") from exc
    return iio.get_writer(
        tmp,
        format="FFMPEG",
        mode="I",
        fps=fps,
        codec="libx264",
        pixelformat="yuv420p",
        macro_block_size=2,
        quality=None,
        ffmpeg_log_level="error",
        # One encoder thread: the sandbox caps its processes and threads, and frames are small.
        output_params=[
            *("-preset", "veryfast", "-crf", "28", "-threads", "1"),
            *("-movflags", "+faststart"),  # index first: a browser can start playing at once
        ],
    )


def _check_size(tmp: Path, max_bytes: int) -> None:
    """Stop as soon as the file is over the cap (checked while encoding and at the end)."""
    size = tmp.stat().st_size if tmp.exists() else 0
    if size > max_bytes:
        raise NoVideo(f"video larger than the cap ({size / MIB:.1f} MiB > {max_bytes / MIB:g} MiB)")


def _render_failure(env: gym.Env[Any, Any], exc: Exception) -> str:
    """A reason a user can act on: MuJoCo failures are almost always a missing GL library."""
    if "mujoco" in type(env.unwrapped).__module__:
        return f"{NO_OPENGL} ({one_line(exc)})"
    return f"the environment cannot render: {one_line(exc)}"


def no_video(reason: str) -> VideoResult:
    """A result with no file, for a reason shortened to one line."""
    return VideoResult(None, 0, reason.replace("\n", " ")[:_REASON_CHARS], False)


def one_line(exc: BaseException) -> str:
    """The exception's type and first line: enough to search for, short enough for a table."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _close_quietly(env: gym.Env[Any, Any]) -> None:
    """Close the environment; a renderer failing to shut down must not hide the result."""
    with contextlib.suppress(Exception):
        env.close()


_PROBE = """
import sys
import gymnasium as gym
for env_id in sys.argv[1:]:
    try:
        env = gym.make(env_id, render_mode="rgb_array")
        env.reset(seed=0)
        frame = env.render()
        env.close()
        ok = getattr(frame, "ndim", 0) == 3 and frame.size > 0
        print(env_id, "ok" if ok else "fail render() returned no image", flush=True)
    except Exception as exc:
        line = (str(exc).strip().splitlines() or [""])[0]
        print(env_id, "fail", type(exc).__name__ + ":", line, flush=True)
"""
_PROBE_ENVS = ("CartPole-v1", "HalfCheetah-v5")


def rendering_status() -> tuple[bool, str]:
    """Whether this machine can render rollout videos, for `rewardsmith doctor`. The probe runs
    in a subprocess, so a GL driver that crashes cannot take the caller down."""
    chosen = select_gl_backend(os.environ)
    env = {**QUIET_SDL, **os.environ, **chosen}
    backend = f"MUJOCO_GL={chosen['MUJOCO_GL']}" if chosen else "no GL backend found"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, *_PROBE_ENVS],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"rendering probe timed out after 60 s ({backend})"
    return _probe_verdict(done.stdout, done.returncode, backend)


def _probe_verdict(stdout: str, returncode: int, backend: str) -> tuple[bool, str]:
    """Read the probe's one line per environment into (ok, one-line message)."""
    results = dict(line.split(" ", 1) for line in stdout.splitlines() if " " in line)
    for env_id in _PROBE_ENVS:
        outcome = results.get(env_id)
        if outcome is None:
            return (
                False,
                f"{env_id} crashed the renderer (exit {returncode}, {backend}); {_fix(env_id)}",
            )
        if outcome != "ok":
            return False, f"{env_id} cannot render ({backend}): {outcome[5:]}; {_fix(env_id)}"
    return True, f"rollout videos can be rendered (MuJoCo through {backend}, pygame for 2D)"


def _fix(env_id: str) -> str:
    """What to install for the probe environment that failed."""
    if env_id == "HalfCheetah-v5":
        return "install libegl-mesa0 or libosmesa6 and set MUJOCO_GL=egl|osmesa"
    return "install pygame (pip install 'gymnasium[classic-control]')"
