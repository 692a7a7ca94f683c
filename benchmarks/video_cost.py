"""What a rollout video costs against the evaluation it illustrates, per task.

For each task it trains one policy briefly on the human reward (`train_reward`, process sandbox,
the task's default evaluation episodes), then, alternating, `REPEATS` times each:

- the evaluation: `evaluate_policy`, the reward-free evaluator program, in the process sandbox;
- the video: `record_video`, the video program, in the process sandbox (what `--videos` adds to
  a run per filmed policy).

Both are whole sandboxed programs: a fresh process that imports torch and SB3, rebuilds the model
and loads the weights before it runs a single step. To separate that fixed cost from the work
itself, it also times, in this process with the same trained policy and everything imported,
the evaluation's episodes (`rollout_episodes`, as the evaluator runs them) and the video's
episode (`record_episode`: the same first evaluation episode, rendered and encoded).

Writes benchmarks/results/video_cost.json and .md.
Run: `python benchmarks/video_cost.py [--task T ...] [--repeats N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import imageio.v3 as iio
import numpy as np

from rewardsmith.envs import load_task
from rewardsmith.jobs.training import evaluate_policy, make_job, train_reward
from rewardsmith.jobs.video import record_video
from rewardsmith.programs.evaluate_sb3 import FINAL_EVAL_SEED, trained_policy
from rewardsmith.rl.rollout import rollout_episodes
from rewardsmith.rl.video import (  # the two private helpers: to draw frames as it does
    VideoLimits,
    _cheapen_mujoco_visuals,
    _make_render_env,
    prepare_render_environment,
    record_episode,
    rendering_status,
)
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).parent / "results"
# Brief trainings: enough for a policy that does something, not for a good one.
TRAIN_STEPS = {"cartpole": 16384, "lunarlander": 16384, "halfcheetah": 2048}
REPEATS = 3
SEED = 0
TARGET = 0.10  # the target: rendering under 10% of the evaluation's time


def timed(fn: Any) -> tuple[float, Any]:
    """Wall seconds of `fn()` and what it returned."""
    start = time.monotonic()
    value = fn()
    return time.monotonic() - start, value


def render_only_s(adapter: Any, policy: Any, seed: int, frames: int) -> float:
    """Wall seconds to step the video's episode and draw its `frames` frames, encoding nothing:
    `record_episode`'s time less this is the policy and the encoder (ffmpeg, libx264)."""
    env = _make_render_env(adapter)
    _cheapen_mujoco_visuals(env)  # as record_episode draws: MuJoCo's shadows and MSAA cut
    obs, _ = env.reset(seed=seed)
    start = time.monotonic()
    env.render()
    for _ in range(frames - 1):
        obs, _, terminated, truncated, _ = env.step(np.asarray(policy(obs[None]))[0])
        env.render()
        if terminated or truncated:
            break
    elapsed = time.monotonic() - start
    env.close()
    return elapsed


def measure(task_id: str, steps: int, repeats: int) -> dict[str, Any]:
    """One task: train once, then alternate the sandboxed evaluation and video, then time both
    episodes' work in this process."""
    adapter = load_task(task_id)
    sandbox = ProcessSandbox()
    job = make_job(adapter, steps=steps, seed=SEED)
    with tempfile.TemporaryDirectory(prefix="rs-video-cost-") as tmp:
        cand = Path(tmp) / "cand"
        cand.mkdir()
        outcome = train_reward(adapter, job, adapter.reward_source("human"), cand, sandbox)
        assert outcome.ok, outcome.error
        print(f"{task_id}: trained {steps} steps in {outcome.wall_s:.1f} s", flush=True)

        evals, videos, frames, sizes = [], [], set(), set()
        dest = Path(tmp) / "rollout.mp4"
        for _ in range(repeats):
            eval_s, (error, _) = timed(
                lambda: evaluate_policy(adapter, job, cand, sandbox, Limits())
            )
            assert error is None, error
            dest.unlink(missing_ok=True)
            video_s, video = timed(lambda: record_video(adapter, job, cand, dest, sandbox))
            assert video.reason is None, video.reason
            evals.append(eval_s)
            videos.append(video_s)
            frames.add(video.frames)
            sizes.add(dest.stat().st_size)
            print(f"  evaluation {eval_s:.2f} s, video {video_s:.2f} s", flush=True)
        width, height = iio.immeta(dest, plugin="FFMPEG")["size"]

        # The same work without the programs' start-up: this process has everything imported.
        _, policy = trained_policy(job, cand / "job", cand / "job")
        seed = FINAL_EVAL_SEED + job.seed
        episodes_runs, render_runs, draw_runs = [], [], []
        for i in range(repeats):
            episodes_s, episodes = timed(
                lambda: rollout_episodes(adapter, policy, job.eval_episodes * 2, seed)
            )
            out = Path(tmp) / f"inline{i}.mp4"
            render_s, rendered = timed(
                lambda out=out: record_episode(adapter, policy, seed, out, VideoLimits())
            )
            assert rendered.reason is None, rendered.reason
            episodes_runs.append(episodes_s)
            render_runs.append(render_s)
            draw_runs.append(render_only_s(adapter, policy, seed, rendered.frames))

    eval_med, video_med = statistics.median(evals), statistics.median(videos)
    episodes_med, render_med = statistics.median(episodes_runs), statistics.median(render_runs)
    return {
        "train_steps": steps,
        "train_and_eval_wall_s": outcome.wall_s,
        "fitness": outcome.fitness,
        "eval_episodes": job.eval_episodes * 2,
        "eval_env_steps": sum(e.length for e in episodes),
        "evaluation_s": evals,
        "video_s": videos,
        "evaluation_median_s": eval_med,
        "video_median_s": video_med,
        "ratio": video_med / eval_med,
        "frames": sorted(frames),
        "video_kb": [round(s / 1024, 1) for s in sorted(sizes)],
        "resolution": f"{width}x{height}",
        "inline_episodes_median_s": episodes_med,
        "inline_render_median_s": render_med,
        "inline_ratio": render_med / episodes_med,
        "inline_draw_only_median_s": statistics.median(draw_runs),
        "fixed_evaluation_s": eval_med - episodes_med,
        "fixed_video_s": video_med - render_med,
    }


def main() -> int:
    """Measure every task asked for (all by default) and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", action="append", choices=sorted(TRAIN_STEPS))
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    prepare_render_environment()  # as the video program does: before anything imports MuJoCo
    ok, why = rendering_status()
    if not ok:
        print(f"this machine cannot render: {why}", file=sys.stderr)
        return 1
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = {
        task: measure(task, TRAIN_STEPS[task], args.repeats) for task in args.task or TRAIN_STEPS
    }
    record = {
        "started": started,
        "ended": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg_end": os.getloadavg(),
            "rendering": why,
        },
        "process_isolation": ProcessSandbox().isolation(),
        "repeats": args.repeats,
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "video_cost.json").write_text(json.dumps(record, indent=2) + "\n")
    (RESULTS / "video_cost.md").write_text(markdown(record))
    print(markdown(record))
    return 0


def markdown(record: dict[str, Any]) -> str:
    """The record as results/video_cost.md shows it, with how each number was taken."""
    machine = record["machine"]
    lines = [
        "# Rollout videos: what rendering costs",
        "",
        f"Measured {record['started']} to {record['ended']}; {machine['cpus']} CPUs, no GPU, "
        f"load average {machine['load_avg_end'][0]:.1f} at the end. Rendering: "
        f"{machine['rendering']}.",
        f"Process backend: {record['process_isolation']}.",
        "",
        "Each task's policy trained briefly on the human reward (steps below, seed 0), evaluated at",
        "the task's default episode count. Evaluation and video: wall seconds of the sandboxed",
        f"program (`evaluate_policy`, `record_video`), median of {record['repeats']}, alternating.",
        "In-process: the same trained policy in this process, everything imported: the",
        "evaluation's episodes (`rollout_episodes`) against the video's one episode rendered and",
        "encoded (`record_episode`), and of that the drawing alone (the same episode stepped and",
        "rendered, nothing encoded), median of as many runs. Target: video under "
        f"{TARGET:.0%} of the evaluation.",
        "",
        "| task | trained | evaluation (episodes, env steps) | video | video / evaluation "
        "| frames | size | in-process: episodes | in-process: video | of which drawing | in-process ratio |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for task, row in record["results"].items():
        frames = "/".join(str(f) for f in row["frames"])
        size = "/".join(f"{kb:.0f}" for kb in row["video_kb"])
        lines.append(
            f"| {task} | {row['train_steps']:,} steps | {row['evaluation_median_s']:.2f} s "
            f"({row['eval_episodes']}, {row['eval_env_steps']:,}) | {row['video_median_s']:.2f} s "
            f"| {row['ratio']:.2f} | {frames} ({row['resolution']}) | {size} KB "
            f"| {row['inline_episodes_median_s']:.2f} s | {row['inline_render_median_s']:.2f} s "
            f"| {row['inline_draw_only_median_s']:.2f} s | {row['inline_ratio']:.2f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
