"""Rollout videos, the orchestrator's side: run the video program on a trained policy and keep
the MP4 it wrote, read back as a hostile file (`sandbox.video_file`: no links, a size cap, the
container's boxes checked; never decoded here), and the stills it kept for the video judge
(`keyframes.npz`: read with the hostile `.npz` reader, never unpickled, its arrays checked, then
written again by the trusted side).

A video never fails what it illustrates: every failure, from a machine without OpenGL to a
refused file, comes back as a reason and the candidate's outcome stands.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith import job_spec as files
from rewardsmith.atomic import write_bytes
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs import compile_store
from rewardsmith.jobs.records import BadRecord, checked, integer, obj, text
from rewardsmith.jobs.training import task_input
from rewardsmith.rl.video import Keyframes, VideoLimits, keyframes_npz
from rewardsmith.runs import layout
from rewardsmith.sandbox.runner import run_job
from rewardsmith.sandbox.types import Limits, Sandbox
from rewardsmith.sandbox.video_file import keep_video
from rewardsmith.sandbox.worker_files import WorkerFileError, read_npz, read_record

PROGRAMS: dict[str, tuple[str, float]] = {
    # the build, the rollout and at most VideoLimits.max_seconds of rendering
    "sb3": ("rewardsmith.programs.record_video", 180.0),
    # compiles its episode first: ~45 s for HalfCheetah on MJX and ~150 s for Humanoid (2 GB)
    # on two busy cores, before the same rendering; films the JAX environment's own episode
    "jax": ("rewardsmith.programs.record_video_jax", 420.0),
}
"""The video program of each backend and its wall-clock limit in seconds; both read the trained
policy from `job/` as its evaluator does and leave the same files."""
KEYFRAMES_CAP = 4 * 1024 * 1024  # bytes of keyframes.npz, on disk and expanded
VIDEO_DISK_MB = (2 * VideoLimits().max_bytes + 2 * KEYFRAMES_CAP) // (1024 * 1024)
VIDEO_DISK_FILES = 64
VIDEO_MEMORY_MB = 3072
RESULT_CAP = 16 * 1024
MAX_KEYFRAMES = 32
MAX_KEYFRAME_SIDE = VideoLimits().keyframe_side
MAX_KEYFRAME_SECONDS = 3600.0


@dataclass(frozen=True)
class VideoOutcome:
    """Where the kept video is, or why there is none; and how many stills were kept beside it,
    or why none were."""

    path: Path | None
    reason: str | None = None
    frames: int = 0
    keyframes: int = 0
    keyframes_reason: str | None = None


def check_keyframes(arrays: dict[str, np.ndarray]) -> Keyframes:
    """The arrays of `keyframes.npz`: uint8 `frames` [K, H, W, 3] no larger than the program
    makes them, and `seconds` [K], finite, from 0 and never decreasing."""
    if set(arrays) != {"frames", "seconds"}:
        raise BadRecord(f"holds {sorted(arrays)[:4]}, not exactly frames and seconds")
    frames, seconds = arrays["frames"], arrays["seconds"]
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3:
        raise BadRecord(f"frames are {frames.dtype} {frames.shape}, not uint8 [K, H, W, 3]")
    count, height, width = frames.shape[:3]
    if not 1 <= count <= MAX_KEYFRAMES:
        raise BadRecord(f"holds {count} frames, not 1 to {MAX_KEYFRAMES}")
    if not (1 <= height <= MAX_KEYFRAME_SIDE and 1 <= width <= MAX_KEYFRAME_SIDE):
        raise BadRecord(f"frames are {height}x{width}, over {MAX_KEYFRAME_SIDE} px a side")
    if seconds.dtype.kind != "f" or seconds.shape != (count,):
        raise BadRecord(f"seconds are {seconds.dtype} {seconds.shape}, not {count} floats")
    if not np.all(np.isfinite(seconds)) or np.any(np.diff(seconds) < 0):
        raise BadRecord("seconds are not finite and rising")
    if seconds[0] < 0 or seconds[-1] > MAX_KEYFRAME_SECONDS:
        raise BadRecord(f"seconds are outside 0 to {MAX_KEYFRAME_SECONDS:g}")
    return Keyframes(np.ascontiguousarray(frames), seconds.astype(np.float64))


def read_keyframes(work_dir: Path) -> Keyframes:
    """The checked stills the video program kept; a missing or bad file: `WorkerFileError`."""
    name = files.KEYFRAMES_FILE
    arrays = read_npz(work_dir, name, KEYFRAMES_CAP, KEYFRAMES_CAP)
    keyframes: Keyframes = checked(name, check_keyframes, arrays)
    return keyframes


def keep_keyframes(work_dir: Path, dest: Path) -> tuple[int, str | None]:
    """Copy the checked stills to `dest` (written anew by the trusted side, atomically): how
    many were kept, or 0 and why none were."""
    try:
        keyframes = read_keyframes(work_dir)
    except WorkerFileError as exc:
        return 0, str(exc)[:300]
    write_bytes(dest, keyframes_npz(keyframes))
    return len(keyframes.frames), None


def check_video_record(record: Any) -> VideoOutcome:
    """The schema of `video.json`: a frame count, and a reason where there is no video."""
    record = obj(record, "the video record")
    reason = record.get("reason")
    return VideoOutcome(
        None,
        text(record, "reason", 300) if reason is not None else None,
        integer(record, "frames", 0, 100_000),
    )


def read_video(work_dir: Path) -> VideoOutcome:
    """The checked `video.json` (the video itself is checked when it is kept)."""
    record = read_record(work_dir, files.VIDEO_RESULT_FILE, RESULT_CAP)
    outcome: VideoOutcome = checked(files.VIDEO_RESULT_FILE, check_video_record, record)
    return outcome


def record_video(
    adapter: TaskAdapter,
    job: TrainJob,
    candidate_dir: Path,
    dest: Path,
    sandbox: Sandbox,
    limits: Limits | None = None,
    keyframes_dest: Path | None = None,
) -> VideoOutcome:
    """Render the policy trained in `candidate_dir/job/` and keep the video at `dest` (and its
    checked stills at `keyframes_dest`, if given). The backend's program films it (`PROGRAMS`):
    both read only the job file (an input) and the trained weights (`job/` is readable: SB3's
    model, or the JAX backend's `policy_params.npz`).

    The program's folder (`candidate_dir/video/`) is scratch, removed once read; only the checked
    copies stay."""
    if job.backend not in PROGRAMS:
        return VideoOutcome(None, f"no video program for the {job.backend!r} backend")
    program, wall_s = PROGRAMS[job.backend]
    job_dir, work_dir = candidate_dir / layout.JOB_DIR, candidate_dir / layout.VIDEO_DIR
    # The JAX program compiles its episode (minutes on MJX): the task's earlier videos left it.
    store = compile_store.store_for(job.task_id, "video") if job.backend == "jax" else None
    stores = [store] if store is not None else []
    kept: list[VideoOutcome] = []

    def read_and_keep(folder: Path) -> VideoOutcome:
        if store is not None:
            compile_store.harvest(folder, store)
        outcome = _keep(folder, dest, keyframes_dest)
        kept.append(outcome)
        return outcome

    ran = run_job(
        sandbox,
        program,
        [str(work_dir), str(job_dir), *map(str, stores)],
        workdir=work_dir,
        inputs={
            files.JOB_FILE: job.to_json(),
            **task_input(adapter),
        },
        limits=(limits or Limits(memory_mb=VIDEO_MEMORY_MB)).within(
            wall_s=wall_s,
            disk_mb=VIDEO_DISK_MB + (compile_store.COPY_DISK_MB if stores else 0),
            disk_files=VIDEO_DISK_FILES + (compile_store.COPY_FILES if stores else 0),
        ),
        log_path=layout.program_log(work_dir, "video"),
        read=read_and_keep,
        what="recording the video",
        readable=[job_dir, *stores],
        scratch=True,
    )
    if ran.error is not None:
        return VideoOutcome(None, f"{ran.error.category.value}: {ran.error.message}"[:300])
    return kept[0] if kept else VideoOutcome(None, "the video program left no record")


def _keep(folder: Path, dest: Path, keyframes_dest: Path | None) -> VideoOutcome:
    """Read the program's record, keep its checked video and, where asked, its checked stills."""
    outcome = read_video(folder)
    if outcome.reason is not None:
        return outcome
    refused = keep_video(folder / files.VIDEO_FILE, dest, VideoLimits().max_bytes)
    outcome = VideoOutcome(None if refused else dest, refused, outcome.frames)
    if keyframes_dest is None or refused:
        return outcome
    count, why = keep_keyframes(folder, keyframes_dest)
    return replace(outcome, keyframes=count, keyframes_reason=why)
