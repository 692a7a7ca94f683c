"""Rollout videos in the loop: which trained policies are filmed (`--videos`), and when.

`best` films each round's best candidate once it is chosen and the first seed of each arm of the
final evaluation; `all` films every candidate as its training ends; the video judge (`--judge
vlm`) films the candidates it judges whatever `--videos` says (`force`). Filming runs the video
program in the sandbox (`jobs.video`); it never fails or blocks the run: a machine that cannot
render says why once, and the run goes on without videos. Each filmed folder keeps `video.json`
(and the video's checked stills, `keyframes.npz`), so a resume never films twice.
"""

from __future__ import annotations

from rewardsmith.choices import Videos
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.state import (
    CandidateKey,
    CandidateSummary,
    Context,
    search_seed,
    training_job,
)
from rewardsmith.jobs.video import record_video
from rewardsmith.runs.candidate import CandidateStatus, TrainingFiles


def film(ctx: Context, folder: TrainingFiles, seed: int, *, force: bool = False) -> None:
    """Film the policy trained in `folder` with `seed` (the job is rebuilt as it trained), unless
    videos are off (and not `force`d) or the folder was filmed before."""
    if (ctx.config.videos == Videos.NONE and not force) or folder.video_note() is not None:
        return
    job = training_job(ctx, seed)
    outcome = record_video(
        ctx.adapter,
        job,
        folder.path,
        folder.video_path,
        ctx.sandbox,
        keyframes_dest=folder.keyframes_path,
    )
    folder.write_video_note(
        {
            "frames": outcome.frames,
            "reason": outcome.reason,
            "keyframes": outcome.keyframes,
            "keyframes_reason": outcome.keyframes_reason,
        }
    )
    if outcome.reason is not None:
        _tell_once(ctx, outcome.reason)


def _tell_once(ctx: Context, reason: str) -> None:
    """One message per distinct reason per run: a machine without OpenGL is said once, not per
    candidate."""
    if reason not in ctx.video_reasons_told:
        ctx.video_reasons_told.add(reason)
        ctx.reporter.message(f"no rollout video: {reason}")


def film_trained(ctx: Context, candidates: list[CandidateSummary]) -> None:
    """`--videos all`: film every trained candidate of the round, `parallel` at a time."""
    if ctx.config.videos != Videos.ALL:
        return
    trained = [c for c in candidates if c.get("status") == CandidateStatus.TRAINED]
    in_parallel(ctx, lambda c: film_candidate(ctx, c), trained, "video")


def film_candidate(ctx: Context, candidate: CandidateSummary, *, force: bool = False) -> None:
    """Film a candidate of the search, with the seed it trained on (`force`: even with
    `--videos none`)."""
    if ctx.config.videos == Videos.NONE and not force:
        return
    key = CandidateKey.of(candidate)
    film(ctx, ctx.run.candidate(key), search_seed(ctx.config, key), force=force)
