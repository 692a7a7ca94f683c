"""The JAX video program: film the episode the JAX evaluator measured, in the JAX environment.

Runs as `python -m rewardsmith.programs.record_video_jax WORK_DIR POLICY_DIR [CACHE_STORE]` after
the worker has exited, with the same contract as `record_video` (the SB3 program): the network is
rebuilt from the orchestrator's job file in WORK_DIR like `evaluate_jax` does, only the parameter
arrays come from POLICY_DIR, and it writes WORK_DIR/rollout.mp4, WORK_DIR/keyframes.npz and
WORK_DIR/video.json (frames, or why there is no video). With a store (read-only), the episode's
compiled program is reused and a new one left for the orchestrator to keep, as the evaluator does
(`rewardsmith.rl.jax.compile_cache`).

The episode is the evaluator's first, played again in the task's own JAX environment: the same
key (`FINAL_EVAL_SEED + job.seed`, split as the evaluator splits it for its batch, so the reset is
the same), the same deterministic policy, cut at the first termination, and at most
`VideoLimits.max_frames` frames. Only the physical state of each step is kept; the frames are
drawn from it afterwards, never by simulating again:

- MJX tasks: each step's `q` is put into a `MjData` of the Brax environment's own MuJoCo model
  (`env.sys.mj_model`), `mj_forward`, and drawn by `mujoco.Renderer` (EGL or OSMesa, headless)
  with a camera that tracks the torso.
- gymnax tasks: each step's gymnax state is set as the matching Gymnasium environment's
  `unwrapped.state`, and that environment's `render()` draws it (pygame, no display).

Frames go through `rl.video.encode_frames`, like the SB3 program's, so the caps, the encoding and
the stills for the video judge are the same. A rendering failure is a reason, never a failed exit.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith.atomic import write_bytes, write_record
from rewardsmith.job_spec import KEYFRAMES_FILE, VIDEO_FILE, VIDEO_RESULT_FILE, TrainJob
from rewardsmith.programs.evaluate_jax import FINAL_EVAL_SEED
from rewardsmith.rl.video import (
    NO_OPENGL,
    NoVideo,
    VideoLimits,
    VideoResult,
    cheapen_mujoco_model,
    encode_frames,
    keyframes_npz,
    no_video,
    one_line,
    playback_fps,
    prepare_render_environment,
)

TRACKING_CAMERA = {"trackbodyid": 1, "elevation": -20.0}
"""The MJX tasks' camera: it follows the torso (body 1), from the side and a little above."""
MJX_CAMERA_DISTANCE = {"hopper": 3.0}  # others: 4.0, as Gymnasium's own cameras
"""How far the tracking camera stays from the torso, in metres."""


@dataclass(frozen=True)
class PlayedEpisode:
    """The physical states of one played episode: the reset's and each step's, in order."""

    states: Any
    """MJX: `q` `[T + 1, nq]`; gymnax: the environment's state with leading axis `T + 1`."""
    frames: int
    """States to draw (T + 1): up to and including the first termination, within the cap."""
    cut_short: bool
    """The frame cap ended the episode before it terminated or reached its length."""


def main(work_dir: Path, policy_dir: Path, store: Path | None = None) -> int:
    """Record the video; a rendering failure is a reason in video.json, never a failed exit."""
    # The sandbox turns MuJoCo's GL off for every program (none other renders): this one picks
    # the headless backend the machine has, before JAX, Brax or MuJoCo is imported.
    if os.environ.get("MUJOCO_GL") == "disable":
        del os.environ["MUJOCO_GL"]
    prepare_render_environment()
    from rewardsmith.rl.jax import prepare_process

    prepare_process()
    if store is not None:
        from rewardsmith.rl.jax.compile_cache import use as use_compile_cache

        use_compile_cache(store, work_dir)
    from rewardsmith.rl.jax.policy import PARAMS_FILE, config_from_job, load_params, make_policy_fn
    from rewardsmith.rl.jax.tasks import jax_task

    job = TrainJob.read(work_dir)
    limits = VideoLimits()
    task = jax_task(job.task_id)
    env = task.make_batch_env()
    make_policy, template = make_policy_fn(
        config_from_job(job.hyperparams), env.observation_size, env.action_size
    )
    params = load_params(policy_dir / PARAMS_FILE, template)
    episode = play_first_evaluation_episode(
        env, make_policy, params, FINAL_EVAL_SEED + job.seed, job.eval_episodes * 2, limits
    )
    result = film(env, episode, work_dir / VIDEO_FILE, limits)
    if result.keyframes is not None:
        write_bytes(work_dir / KEYFRAMES_FILE, keyframes_npz(result.keyframes))
    write_record(
        work_dir / VIDEO_RESULT_FILE,
        {"frames": result.frames, "reason": result.reason, "truncated": result.truncated},
    )
    return 0


def physical_state(env: Any) -> Callable[[Any], Any]:
    """What to keep of a batched environment's pipeline state to draw it: MJX's `q`, or the
    whole gymnax state (a few numbers)."""
    if env.task.brax_id is not None:
        return lambda pipeline_state: pipeline_state["inner"].pipeline_state.q
    return lambda pipeline_state: pipeline_state


def play_first_evaluation_episode(
    env: Any, make_policy: Any, params: Any, seed: int, n_episodes: int, limits: VideoLimits
) -> PlayedEpisode:
    """The first of the `n_episodes` episodes that `evaluate_jax` plays from `seed`, in a batch
    of one: the key is split for `n_episodes` as the evaluator splits it (a split's first key
    depends on their number), so the reset state is the evaluator's first one."""
    import jax

    from rewardsmith.rl.jax.rollout import deterministic_policy

    steps = min(env.task.episode_length, limits.max_frames - 1)
    keep = physical_state(env)

    def run(params: Any, key: jax.Array) -> tuple[Any, Any, jax.Array]:
        policy = deterministic_policy(make_policy, params)
        start = env.reset(jax.random.split(key, n_episodes)[:1])

        def one_step(state: Any, _: Any) -> tuple[Any, tuple[Any, jax.Array]]:
            nxt = env.step(state, policy(state.obs))
            return nxt, (keep(nxt.pipeline_state), nxt.done)

        _, (states, done) = jax.lax.scan(one_step, start, None, length=steps)
        return keep(start.pipeline_state), states, done

    first, states, done = jax.device_get(jax.jit(run)(params, jax.random.PRNGKey(seed)))
    ended = np.flatnonzero(np.asarray(done)[:, 0] > 0.5)
    length = int(ended[0]) + 1 if len(ended) else steps
    # Environment 0 of the batch, the reset's state first: [T + 1, ...] for every leaf.
    both = jax.tree_util.tree_map(
        lambda a, b: np.concatenate([np.asarray(a)[None, 0], np.asarray(b)[:length, 0]]),
        first,
        states,
    )
    cut_short = not len(ended) and steps < env.task.episode_length
    return PlayedEpisode(both, length + 1, cut_short)


def film(env: Any, episode: PlayedEpisode, path: Path, limits: VideoLimits) -> VideoResult:
    """Draw the episode's states and encode them to `path`; never raises."""
    try:
        if env.task.brax_id is not None:
            frames, fps = mujoco_frames(env, episode, limits)
        else:
            frames, fps = gymnasium_frames(env.task, episode, limits)
    except NoVideo as exc:
        return no_video(str(exc))
    except Exception as exc:
        return no_video(f"recording failed: {one_line(exc)}")
    return encode_frames(frames, path, fps, limits)


def mujoco_frames(
    env: Any, episode: PlayedEpisode, limits: VideoLimits
) -> tuple[Generator[np.ndarray, None, bool], int]:
    """The frames of an MJX episode, drawn from its `q` in the Brax environment's own MuJoCo
    model, and its real-time frame rate (one frame per environment step)."""
    import mujoco

    model = env.env.sys.mj_model
    cheapen_mujoco_model(model)  # visual settings only; the physics ran on MJX already
    side = min(limits.max_side, model.vis.global_.offwidth, model.vis.global_.offheight)
    fps = playback_fps(1.0 / float(env.env.dt), limits)

    def frames() -> Generator[np.ndarray, None, bool]:
        try:
            renderer = mujoco.Renderer(model, side, side)
        except Exception as exc:
            raise NoVideo(f"{NO_OPENGL} ({one_line(exc)})") from exc
        try:
            data = mujoco.MjData(model)
            camera = tracking_camera(model, env.task.id)
            for q in np.asarray(episode.states):
                data.qpos[:] = q
                mujoco.mj_forward(model, data)
                try:
                    renderer.update_scene(data, camera=camera)
                    yield renderer.render()
                except Exception as exc:
                    raise NoVideo(f"{NO_OPENGL} ({one_line(exc)})") from exc
        finally:
            renderer.close()
        return episode.cut_short

    return frames(), fps


def tracking_camera(model: Any, task_id: str) -> Any:
    """A camera that follows the torso (body 1) from the side, a little above it."""
    import mujoco

    camera = mujoco.MjvCamera()
    mujoco.mjv_defaultFreeCamera(model, camera)
    camera.type = mujoco.mjtCamera.mjCAMERA_TRACKING
    settings = {**TRACKING_CAMERA, "distance": MJX_CAMERA_DISTANCE.get(task_id, 4.0)}
    for name, value in settings.items():  # as Gymnasium applies its `default_cam_config`
        setattr(camera, name, value)
    return camera


def _cartpole(state: Any, i: int) -> dict[str, Any]:
    return {"state": [state.x[i], state.x_dot[i], state.theta[i], state.theta_dot[i]]}


def _pendulum(state: Any, i: int) -> dict[str, Any]:
    # Gymnasium draws the last torque's arrow; there is none after a reset.
    return {
        "state": [state.theta[i], state.theta_dot[i]],
        "last_u": float(state.last_u[i]) if i else None,
    }


def _acrobot(state: Any, i: int) -> dict[str, Any]:
    angles = [state.joint_angle1[i], state.joint_angle2[i]]
    return {"state": [*angles, state.velocity_1[i], state.velocity_2[i]]}


def _mountaincar(state: Any, i: int) -> dict[str, Any]:
    return {"state": [state.position[i], state.velocity[i]]}


GYMNASIUM_STATE: dict[str, Callable[[Any, int], dict[str, Any]]] = {
    "cartpole": _cartpole,
    "pendulum": _pendulum,
    "acrobot": _acrobot,
    "mountaincar-continuous": _mountaincar,
}
"""For each gymnax task, the attributes of the Gymnasium environment that draws it, from step
`i` of the played gymnax states (`state`: the array Gymnasium's dynamics keep)."""


def gymnasium_frames(
    task: Any, episode: PlayedEpisode, limits: VideoLimits
) -> tuple[Generator[np.ndarray, None, bool], int]:
    """The frames of a gymnax episode, drawn by the matching Gymnasium environment (the same
    classic-control geometry) from each state, and that environment's frame rate."""
    import gymnasium as gym

    to_attributes = GYMNASIUM_STATE.get(task.id)
    if to_attributes is None:
        raise NoVideo(f"no renderer for the JAX variant of {task.id}")
    try:
        env = gym.make(task.gymnax_id, render_mode="rgb_array").unwrapped
    except Exception as exc:
        raise NoVideo(f"cannot build {task.gymnax_id} for rendering: {one_line(exc)}") from exc
    fps = playback_fps(env.metadata.get("render_fps"), limits)

    def frames() -> Generator[np.ndarray, None, bool]:
        try:
            for i in range(episode.frames):
                for name, value in to_attributes(episode.states, i).items():
                    if name == "state":
                        value = np.asarray(value, dtype=np.float64)
                    setattr(env, name, value)
                try:
                    frame = env.render()
                except Exception as exc:
                    raise NoVideo(f"the environment cannot render: {one_line(exc)}") from exc
                yield np.asarray(frame)
        finally:
            env.close()
        return episode.cut_short

    return frames(), fps


if __name__ == "__main__":
    from rewardsmith.programs.fast_exit import exit_now

    exit_now(main(*map(Path, sys.argv[1:4])))
