"""The video program: render one episode of a trained policy to an MP4, with no reward code.

Runs as `python -m rewardsmith.programs.record_video WORK_DIR POLICY_DIR` after the worker has
exited, like the evaluator: the model is rebuilt from the orchestrator's job file in WORK_DIR and
only the worker's weights come from POLICY_DIR. It writes WORK_DIR/rollout.mp4,
WORK_DIR/keyframes.npz (evenly spaced stills, for the video judge, which never decodes the MP4)
and WORK_DIR/video.json (frames, or why there is no video). The episode is the evaluation's first
(same seed), so the video shows what the fitness measured. Rendering is software (EGL or OSMesa
through MuJoCo, pygame for 2D) and capped in frames, bytes and seconds (`rl.video.VideoLimits`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rewardsmith.atomic import write_bytes, write_record
from rewardsmith.job_spec import KEYFRAMES_FILE, VIDEO_FILE, VIDEO_RESULT_FILE, TrainJob
from rewardsmith.programs.evaluate_sb3 import FINAL_EVAL_SEED, trained_policy
from rewardsmith.rl.video import (
    VideoLimits,
    keyframes_npz,
    prepare_render_environment,
    record_episode,
)


def main(work_dir: Path, policy_dir: Path) -> int:
    """Record the video; a rendering failure is a reason in video.json, never a failed exit."""
    # The sandbox turns MuJoCo's GL off for every program (none other renders): this one picks
    # the headless backend the machine has, before anything imports a renderer.
    if os.environ.get("MUJOCO_GL") == "disable":
        del os.environ["MUJOCO_GL"]
    prepare_render_environment()
    job = TrainJob.read(work_dir)
    adapter, policy = trained_policy(job, work_dir, policy_dir)
    result = record_episode(
        adapter, policy, FINAL_EVAL_SEED + job.seed, work_dir / VIDEO_FILE, VideoLimits()
    )
    if result.keyframes is not None:
        write_bytes(work_dir / KEYFRAMES_FILE, keyframes_npz(result.keyframes))
    write_record(
        work_dir / VIDEO_RESULT_FILE,
        {"frames": result.frames, "reason": result.reason, "truncated": result.truncated},
    )
    return 0


if __name__ == "__main__":
    from rewardsmith.programs.fast_exit import exit_now

    exit_now(main(Path(sys.argv[1]), Path(sys.argv[2])))
