"""The video judge (`--judge vlm`): a vision-language model looks at stills of the fittest
candidates' rollout videos and says whether each policy pursues the task's goal or earns its
fitness by a trick (standing still, a physics glitch, ...).

It runs after each round's training, at the start of the analyze node, so that its verdict
reaches the reflection, and from there the next round's prompt. For each of the round's
`--judge-top` fittest trained candidates it films the policy if nobody has (even with `--videos
none`), then sends one chat request: the goal, the fitness definition and the candidate's fitness
as text, the stills as PNG image parts and, for contrast, the human reward's stills where the run
already filmed them. The stills were made inside the sandbox and checked when they were read back
(`jobs.video`); the orchestrator never decodes the video itself, it only encodes these arrays.

The verdict is kept in `judge.json` beside the candidate: `follows_goal`, `hack`, `from_second`,
`explanation`, or `error` where the model's answer was no verdict or the call failed. The judge is
advisory: it never fails the run and selection stays on fitness; `disagreement` says where the
two part ways, for the select node to report.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import imageio.v3 as iio
import numpy as np

from rewardsmith.choices import Judge
from rewardsmith.eureka_loop.fanout import in_parallel
from rewardsmith.eureka_loop.llm import LLMError, Message, prompt_hash
from rewardsmith.eureka_loop.replies import save_call
from rewardsmith.eureka_loop.state import CandidateKey, CandidateSummary, Context
from rewardsmith.eureka_loop.videos import film_candidate
from rewardsmith.prompts import render
from rewardsmith.runs.candidate import CandidateFiles, TrainingFiles, candidates_on_disk
from rewardsmith.runs.layout import REWARD
from rewardsmith.untrusted_text import plain

HACKS = ("standing_still", "physics_glitch", "moving_backwards", "falling_on_purpose", "other")
"""The tricks the judge may name (`hack` in its answer)."""
PURPOSE = "judge"  # the LLM calls' purpose in the run's index
EXPLANATION_CHARS = 1000
REPLY_KEPT_CHARS = 1000  # of a reply that was no verdict, kept in judge.json to show why
FAR_BELOW = 0.5
"""A judged clean candidate this share of the run's fitness spread below an unjudged best is a
disagreement between the judge and the fitness."""
_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Reference:
    """The human reward's stills, shown beside a candidate's for contrast."""

    label: str
    stills: dict[str, np.ndarray]
    fitness: float | None
    key: str | None = None  # the candidate that holds them, if a candidate does


class NotAVerdict(ValueError):
    """The judge's answer does not follow the schema; the message says where."""


def judge_round(ctx: Context, trained: list[CandidateSummary]) -> None:
    """Judge the round's `judge_top` fittest trained candidates (each once: a resume reuses
    judge.json); nothing when the judge is off."""
    if ctx.config.judge != Judge.VLM:
        return
    if ctx.judge_llm is None:
        _tell_once(ctx, "video judge skipped: this run has no judge model here")
        return
    scored = [c for c in trained if c.get("fitness") is not None]
    top = sorted(scored, key=lambda c: -float(c.get("fitness") or 0.0))[: ctx.config.judge_top]
    reference = human_reference(ctx)
    in_parallel(ctx, lambda c: judge_candidate(ctx, c, reference), top, "judge")


def judge_candidate(
    ctx: Context, candidate: CandidateSummary, reference: Reference | None
) -> dict[str, Any]:
    """Film the candidate if needed, ask the judge, keep and report its verdict."""
    files = ctx.run.candidate(CandidateKey.of(candidate))
    done = files.judge()
    if done is not None:
        return done
    film_candidate(ctx, candidate, force=True)
    key = str(files.key)
    if reference is not None and reference.key == key:
        reference = None  # the human reward itself: nothing to contrast it with
    record = {
        "candidate": key,
        "model": _model_name(ctx),
        "fitness": candidate.get("fitness"),
        "reference": reference.label if reference is not None else None,
        **_verdict(ctx, candidate, files, reference),
    }
    files.write_judge(record)
    ctx.reporter.message(f"{key}: video judge: {verdict_words(record)}")
    return record


def _verdict(
    ctx: Context, candidate: CandidateSummary, files: CandidateFiles, ref: Reference | None
) -> dict[str, Any]:
    """The parsed verdict, or an `error` (no stills, a failed call, an answer off the schema)."""
    stills = files.keyframes()
    if stills is None:
        note = files.video_note() or {}
        why = note.get("keyframes_reason") or note.get("reason") or "it was not filmed"
        return {"error": f"no stills to judge: {why}"}
    messages = judge_messages(ctx, candidate, stills, ref)
    try:
        record = _reply(ctx, f"r{files.key.round:02d}-judge-{files.key}", messages, files.key.round)
    except LLMError as exc:
        return {"error": f"the judge model failed: {exc}"[:500]}
    return parse_verdict(str(record.get("reply", "")))


def _reply(ctx: Context, key: str, messages: list[Message], round_: int) -> dict[str, Any]:
    """The stored reply to the same request, or a new call, saved (without its images) and
    counted against the run's budget before it is used."""
    cached = ctx.run.load_reply(key)
    if cached is not None and cached.get("prompt_hash") == prompt_hash(messages):
        return cached
    assert ctx.judge_llm is not None
    call = ctx.judge_llm.complete(messages)
    call.messages = without_images(call.messages)
    return save_call(ctx, key, round_, PURPOSE, call)


def judge_messages(
    ctx: Context,
    candidate: CandidateSummary,
    stills: dict[str, np.ndarray],
    reference: Reference | None,
) -> list[Message]:
    """One user message: the request text, the candidate's stills, then the reference's."""
    text = render(
        "judge",
        part="request",
        goal=ctx.adapter.goal,
        fitness_description=ctx.adapter.fitness_description,
        success_description=ctx.adapter.success_description,
        fitness=float(candidate.get("fitness") or 0.0),
        seconds=[float(s) for s in stills["seconds"]],
        reference=reference.label if reference is not None else None,
        reference_fitness=reference.fitness if reference is not None else None,
        hacks=HACKS,
    )
    content: list[dict[str, Any]] = [{"type": "text", "text": text}, *image_parts(stills)]
    if reference is not None:
        seconds = [float(s) for s in reference.stills["seconds"]]
        header = render("judge", part="reference", reference=reference.label, seconds=seconds)
        content += [{"type": "text", "text": header}, *image_parts(reference.stills)]
    return [{"role": "user", "content": content}]


def image_parts(stills: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """The stills as OpenAI-style image parts (PNG data URLs), encoded here from checked arrays."""
    return [
        {"type": "image_url", "image_url": {"url": png_data_url(frame)}}
        for frame in stills["frames"]
    ]


def png_data_url(frame: np.ndarray) -> str:
    """An RGB uint8 image as a `data:image/png;base64,...` URL (the same bytes every time, so a
    resumed run's request hashes as the first did)."""
    png = iio.imwrite("<bytes>", np.ascontiguousarray(frame, dtype=np.uint8), extension=".png")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def without_images(messages: Sequence[Message]) -> list[Message]:
    """The messages as the run keeps them: each image's data URL replaced by its size (the stills
    are in keyframes.npz already, and the prompt hash still covers the images)."""
    kept: list[Message] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [_image_placeholder(part) for part in content]
        kept.append({**message, "content": content})
    return kept


def _image_placeholder(part: Any) -> Any:
    if not (isinstance(part, dict) and part.get("type") == "image_url"):
        return part
    url = str((part.get("image_url") or {}).get("url", ""))
    return {"type": "image_url", "image_url": {"url": f"<image omitted: {len(url)} characters>"}}


# --- the answer --------------------------------------------------------------------------------


def parse_verdict(reply: str) -> dict[str, Any]:
    """The verdict in the judge's answer (JSON, possibly in a code fence or among words), or
    `{"error": ..., "reply": ...}` where there is none."""
    try:
        return checked_verdict(json.loads(_json_text(reply)))
    except (NotAVerdict, ValueError, RecursionError) as exc:
        return {
            "error": f"the judge's answer is no verdict: {exc}"[:300],
            "reply": reply[:REPLY_KEPT_CHARS],
        }


def _json_text(reply: str) -> str:
    """The JSON object in `reply`: inside its first code fence if it has one."""
    fenced = _FENCE.search(reply)
    text = fenced.group(1) if fenced else reply
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise NotAVerdict("no JSON object in it")
    return text[start : end + 1]


def checked_verdict(value: Any) -> dict[str, Any]:
    """The verdict's four fields, checked against the schema the request asks for."""
    if not isinstance(value, dict):
        raise NotAVerdict("not a JSON object")
    follows = value.get("follows_goal")
    if not isinstance(follows, bool):
        raise NotAVerdict("follows_goal is not true or false")
    explanation = value.get("explanation")
    if not isinstance(explanation, str):
        raise NotAVerdict("explanation is not a string")
    return {
        "follows_goal": follows,
        "hack": _hack(value.get("hack")),
        "from_second": _second(value.get("from_second")),
        "explanation": explanation.strip()[:EXPLANATION_CHARS],
    }


def _hack(value: Any) -> str | None:
    """`hack`: null, or one of `HACKS` (case and spaces forgiven)."""
    if value is None:
        return None
    name = str(value).strip().lower().replace(" ", "_").replace("-", "_")
    if name in ("", "none", "null"):
        return None
    if name not in HACKS:
        raise NotAVerdict(f"hack {str(value)[:40]!r} is not null or one of {', '.join(HACKS)}")
    return name


def _second(value: Any) -> float | None:
    """`from_second`: null, or a finite number of seconds from 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NotAVerdict("from_second is not null or a number")
    if not math.isfinite(value) or value < 0:
        raise NotAVerdict("from_second is not a finite number from 0")
    return float(value)


def is_verdict(record: dict[str, Any] | None) -> bool:
    """Whether a judge.json holds a verdict (not an error)."""
    return record is not None and "error" not in record and "follows_goal" in record


def is_hack(verdict: dict[str, Any]) -> bool:
    """A verdict that says the policy games its fitness, or does not pursue the goal."""
    return verdict.get("hack") is not None or verdict.get("follows_goal") is False


def verdict_words(record: dict[str, Any]) -> str:
    """A verdict in a few words, for the terminal: `moving_backwards from 3.2 s: ...`."""
    if not is_verdict(record):
        return f"no verdict ({plain(record.get('error', 'none'))})"
    when = record.get("from_second")
    what = record["hack"] or (
        "follows the goal" if record["follows_goal"] else "does not follow the goal"
    )
    since = (
        f" from {when:.1f} s"
        if when is not None and (record["hack"] or not record["follows_goal"])
        else ""
    )
    return f"{what}{since}: {plain(record['explanation'])[:200]}"


def judge_feedback(record: dict[str, Any] | None) -> str:
    """What a verdict adds to the candidate's reflection (the next round's prompt); "" for none."""
    if record is None or not is_verdict(record):
        return ""
    return "\n" + render("judge", part="feedback", verdict=record)


# --- the human reward's stills -----------------------------------------------------------------


def human_reference(ctx: Context) -> Reference | None:
    """The human reward's stills where the run filmed them already: the final evaluation's human
    arm, else a candidate whose code is the human reward (the offline designer's first)."""
    from rewardsmith.eureka_loop.evaluation import same_reward

    human = ctx.adapter.reward_source("human")
    if human is None:
        return None
    arm = ctx.run.evaluation_arm("human", 0)
    if (found := _reference(arm, "the human reward's policy (final evaluation)")) is not None:
        return found
    for files in candidates_on_disk(ctx.run.path):
        if files.keyframes_path.is_file() and same_reward(files.text(REWARD), human):
            label = f"the human reward's policy ({files.key})"
            return _reference(files, label, str(files.key))
    return None


def _reference(folder: TrainingFiles, label: str, key: str | None = None) -> Reference | None:
    stills = folder.keyframes()
    if stills is None:
        return None
    fitness = (folder.outcome() or {}).get("fitness")
    return Reference(label, stills, None if fitness is None else float(fitness), key)


# --- where the judge and the fitness part ways ---------------------------------------------------


def disagreement(
    ctx: Context,
    trained: list[CandidateSummary],
    round_best: CandidateSummary | None,
    best: CandidateSummary | None,
) -> str | None:
    """One sentence where the judge and the fitness disagree: the round's or the run's best is
    judged a hack, or a judged clean candidate is far below an unjudged best; else None."""
    for who, chosen in (("the run's best", best), ("the round's best", round_best)):
        verdict = _verdict_of(ctx, chosen)
        if chosen is not None and verdict is not None and is_hack(verdict):
            return (
                f"the video judge disagrees with the fitness: {who}, {_label(chosen)}, "
                f"{verdict_words(verdict)}; selection stays on fitness"
            )
    if best is None or _verdict_of(ctx, best) is not None:
        return None
    far = FAR_BELOW * _spread(ctx)
    for c in trained:
        verdict = _verdict_of(ctx, c)
        if verdict is not None and not is_hack(verdict) and _fit(best) - _fit(c) > far > 0:
            return (
                f"the video judge disagrees with the fitness: {_label(c)} follows the goal, yet "
                f"it is far below the run's best {_label(best)}; selection stays on fitness"
            )
    return None


def _verdict_of(ctx: Context, candidate: CandidateSummary | None) -> dict[str, Any] | None:
    if candidate is None:
        return None
    record = ctx.run.candidate(CandidateKey.of(candidate)).judge()
    return record if is_verdict(record) else None


def _label(candidate: CandidateSummary) -> str:
    return f"{CandidateKey.of(candidate).label} (fitness {_fit(candidate):.4g})"


def _fit(candidate: CandidateSummary) -> float:
    fitness = candidate.get("fitness")
    return float("-inf") if fitness is None else float(fitness)


def _spread(ctx: Context) -> float:
    seen = [float(c["fitness"]) for c in ctx.run.candidates() if c.get("fitness") is not None]
    return max(seen) - min(seen) if len(seen) > 1 else 0.0


def _model_name(ctx: Context) -> str:
    config = getattr(ctx.judge_llm, "config", None)
    return str(getattr(config, "model", None) or ctx.config.judge_model or ctx.config.model)


def _tell_once(ctx: Context, text: str) -> None:
    if text not in ctx.video_reasons_told:
        ctx.video_reasons_told.add(text)
        ctx.reporter.message(text)
