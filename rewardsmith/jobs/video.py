"""Rollout videos, the orchestrator's side: run the video program on a trained policy and keep
the MP4 it wrote, read back as a hostile file (`sandbox.video_file`: no links, a size cap, the
container's boxes checked; never decoded here).

A video never fails what it illustrates: every failure, from a machine without OpenGL to a
refused file, comes back as a reason and the candidate's outcome stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith import job_spec as files
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.job_spec import TrainJob
from rewardsmith.jobs.records import checked, integer, obj, text
from rewardsmith.rl.video import VideoLimits
from rewardsmith.sandbox.runner import log_beside, run_job
from rewardsmith.sandbox.types import Limits, Sandbox
from rewardsmith.sandbox.video_file import keep_video
from rewardsmith.sandbox.worker_files import read_record

PROGRAM = "rewardsmith.programs.record_video"
VIDEO_WALL_S = 180.0  # the build, the rollout and at most VideoLimits.max_seconds of rendering
VIDEO_DISK_MB = 2 * VideoLimits().max_bytes // (1024 * 1024)  # the video and its temp file
VIDEO_DISK_FILES = 64
VIDEO_MEMORY_MB = 3072
RESULT_CAP = 16 * 1024


@dataclass(frozen=True)
class VideoOutcome:
    """Where the kept video is, or why there is none."""

    path: Path | None
    reason: str | None = None
    frames: int = 0


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
) -> VideoOutcome:
    """Render the policy trained in `candidate_dir/job/` and keep the video at `dest`.

    The program's folder (`candidate_dir/video/`) is scratch, removed once read; only the checked
    copy stays."""
    if job.backend != "sb3":
        return VideoOutcome(None, "videos are recorded on the sb3 backend only so far")
    job_dir, work_dir = candidate_dir / "job", candidate_dir / "video"
    kept: list[VideoOutcome] = []

    def read_and_keep(folder: Path) -> VideoOutcome:
        outcome = read_video(folder)
        if outcome.reason is None:
            refused = keep_video(folder / files.VIDEO_FILE, dest, VideoLimits().max_bytes)
            outcome = VideoOutcome(None if refused else dest, refused, outcome.frames)
        kept.append(outcome)
        return outcome

    task_path = getattr(adapter, "source_path", None)
    ran = run_job(
        sandbox,
        PROGRAM,
        [str(work_dir), str(job_dir)],
        workdir=work_dir,
        inputs={
            files.JOB_FILE: job.to_json(),
            **({files.TASK_FILE: Path(task_path)} if task_path is not None else {}),
        },
        limits=(limits or Limits(memory_mb=VIDEO_MEMORY_MB)).within(
            wall_s=VIDEO_WALL_S, disk_mb=VIDEO_DISK_MB, disk_files=VIDEO_DISK_FILES
        ),
        log_path=log_beside(work_dir, "video"),
        read=read_and_keep,
        what="recording the video",
        readable=[job_dir],
        scratch=True,
    )
    if ran.error is not None:
        return VideoOutcome(None, f"{ran.error.category.value}: {ran.error.message}"[:300])
    return kept[0] if kept else VideoOutcome(None, "the video program left no record")
