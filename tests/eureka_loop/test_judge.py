"""The video judge (`--judge vlm`): stills of the fittest candidates' rollouts go to a vision model
as PNG image parts through the real client (litellm) to the scripted server; its verdict is kept
in judge.json, reaches the next round's prompt, and a best by fitness judged a hack is said
(selection stays on fitness); a malformed answer is an error on record, never a failed run; and
`--judge vlm` without any model is refused before anything runs."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import imageio.v3 as iio
import numpy as np
import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.eureka_loop.judge import (
    judge_feedback,
    parse_verdict,
    png_data_url,
    without_images,
)
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.report import write_report
from rewardsmith.runs.store import RunStore
from rewardsmith.runs.views import load_view
from tests.eureka_loop.rewards import GOOD_ALIVE, GOOD_UPRIGHT
from tests.reporters import Messages

HACK = {
    "follows_goal": False,
    "hack": "moving_backwards",
    "from_second": 3.2,
    "explanation": "The cart slides steadily to the left until it leaves the track.",
}
HACK_REPLY = f"Here is my verdict.\n```json\n{json.dumps(HACK)}\n```\n"


def _is_judge(request: dict[str, Any]) -> bool:
    return isinstance(request["messages"][-1]["content"], list)


def _designer(replies: list[str]) -> Any:
    """The designer's replies in turn, the last one repeated."""
    queue = list(replies)

    def designer(request: dict[str, Any]) -> str:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return designer


def _config(server: Any, **overrides: Any) -> LoopConfig:
    settings: dict[str, Any] = dict(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=2,
        samples=2,
        steps=2048,
        parallel=2,
        evaluate=False,
        sandbox="process",
        videos="none",
        judge="vlm",
    )
    return LoopConfig(**{**settings, **overrides})


def _images(content: list[dict[str, Any]]) -> list[np.ndarray]:
    decoded = []
    for part in content:
        if part["type"] == "image_url":
            url = part["image_url"]["url"]
            assert url.startswith("data:image/png;base64,")
            decoded.append(iio.imread(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    return decoded


# --- the answer, the messages ----------------------------------------------------------------


def test_a_verdict_is_read_from_a_fence_or_from_words_around_it() -> None:
    assert parse_verdict(HACK_REPLY) == HACK
    bare = (
        'Sure: {"follows_goal": true, "hack": "None", "from_second": null, "explanation": " ok "}'
    )
    assert parse_verdict(bare) == {
        "follows_goal": True,
        "hack": None,
        "from_second": None,
        "explanation": "ok",
    }
    spaced = parse_verdict(json.dumps({**HACK, "hack": "Standing Still"}))
    assert spaced["hack"] == "standing_still"


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("It balances nicely.", "no JSON object"),
        ('{"follows_goal": true, "hack": "teleporting", "explanation": "x"}', "teleporting"),
        ('{"hack": null, "explanation": "x"}', "follows_goal"),
        ('{"follows_goal": "yes", "explanation": "x"}', "follows_goal"),
        ('{"follows_goal": true, "from_second": -1, "explanation": "x"}', "from_second"),
        ('{"follows_goal": true, "from_second": "3 s", "explanation": "x"}', "from_second"),
        ('{"follows_goal": true}', "explanation"),
        ("[1, 2]", "no JSON object"),
        ('{"follows_goal": true, "explanation": "x"', "no JSON object"),
        ('{"follows_goal": tru, "explanation": "x"}', "Expecting value"),
    ],
)
def test_a_malformed_answer_is_an_error_that_keeps_the_reply(reply: str, why: str) -> None:
    verdict = parse_verdict(reply)
    assert set(verdict) == {"error", "reply"} and why in verdict["error"]
    assert verdict["reply"] == reply
    assert judge_feedback({"candidate": "r00c00", **verdict}) == ""


def test_the_record_of_a_call_keeps_no_image_and_the_feedback_names_the_trick() -> None:
    still = np.zeros((4, 6, 3), np.uint8)
    url = png_data_url(still)
    assert url == png_data_url(still)  # the same bytes: a resumed run's request hashes the same
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        }
    ]
    kept = without_images(messages)
    assert kept[0]["content"][0] == {"type": "text", "text": "look"}
    assert "base64" not in json.dumps(kept) and messages[0]["content"][1]["image_url"]["url"] == url
    feedback = judge_feedback(HACK)
    assert "moving_backwards from 3.2 s" in feedback and HACK["explanation"] in feedback


# --- refused at start ----------------------------------------------------------------------------


def test_judge_vlm_without_any_model_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--judge-model MODEL"):
        start_run(LoopConfig(task_id="cartpole", judge="vlm"), tmp_path)
    assert not any(tmp_path.iterdir())

    result = CliRunner().invoke(
        app, ["run", "cartpole", "--judge", "vlm", "--runs-dir", str(tmp_path)]
    )
    said = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code != 0 and "--judge vlm needs a vision model" in said, said
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_a_task_that_cannot_render_is_judged_an_error_and_the_run_goes_on(
    tmp_path: Path, scripted_llm: Any
) -> None:
    """The offline designer with a judge model of its own: no stills, no call, no failure."""
    server = scripted_llm()
    config = LoopConfig(
        task_id="line",
        rounds=1,
        samples=2,
        eval_seeds=1,
        evaluate=False,
        sandbox="process",
        judge="vlm",
        judge_model=server.model,
        api_base=server.base_url,
    )
    result = start_run(config, tmp_path)
    assert result["best_fitness"] is not None and server.request_count == 0
    run = RunStore(tmp_path).open_run(result["run_dir"])
    best = result["best_candidate"]
    verdict = run.candidate(CandidateKey.parse(best)).judge()
    assert verdict is not None and verdict["error"].startswith("no stills to judge")
    assert "cannot render" in verdict["error"]
    summary = json.loads((Path(result["run_dir"]) / "round_00" / "summary_a0.json").read_text())
    assert summary["judge_disagrees"] is False


# --- the loop, end to end -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_hack_verdict_is_kept_reaches_the_next_prompt_and_is_said_against_the_fitness(
    tmp_path: Path, scripted_llm: Any
) -> None:
    designer = _designer([GOOD_UPRIGHT, GOOD_ALIVE])
    server = scripted_llm(responder=lambda r: HACK_REPLY if _is_judge(r) else designer(r))
    messages = Messages()
    result = start_run(_config(server), tmp_path, reporter=messages)
    run_dir = Path(result["run_dir"])
    run = RunStore(tmp_path).open_run(run_dir)

    # One request per judged candidate (the top 2 of each round), with the goal and PNG stills.
    judged = [r for r in server.requests if _is_judge(r)]
    assert len(judged) == 4
    first = judged[0]["messages"][-1]["content"]
    text = first[0]["text"]
    assert "Balance a pole upright" in text and "episode length in steps" in text
    assert "no stills to compare with" in text  # no human reward filmed in an LLM run
    images = _images(first)
    cand = next(p for p in sorted(run_dir.glob("round_00/cand_*")) if (p / "judge.json").exists())
    with np.load(cand / "keyframes.npz", allow_pickle=False) as stills:
        frames = stills["frames"]
    assert len(images) == len(frames) >= 2
    assert all(image.shape == frames.shape[1:] == (134, 200, 3) for image in images)
    assert (cand / "rollout.mp4").is_file()  # filmed for the judge, even with --videos none

    # The verdict is on record, next to the fitness it judged.
    for c in run.candidates(0):
        verdict = run.candidate(CandidateKey(0, c["idx"])).judge()
        assert verdict is not None and verdict["hack"] == "moving_backwards"
        assert verdict["from_second"] == 3.2 and verdict["fitness"] == c["fitness"]
        assert verdict["model"] == server.model and verdict["reference"] is None

    # It reaches round 1's designer prompt through the best's reflection.
    designed = [r["messages"][-1]["content"] for r in server.requests if not _is_judge(r)]
    round_1_prompts = designed[2:]
    assert round_1_prompts and all("moving_backwards from 3.2 s" in p for p in round_1_prompts)
    assert HACK["explanation"] in round_1_prompts[0]

    # Selection stays on fitness, and the run says the judge disagrees with it.
    trained = [c for c in run.candidates() if c["status"] == "trained"]
    assert result["best_fitness"] == max(c["fitness"] for c in trained)
    told = [line for line in messages.lines if "video judge disagrees" in line]
    assert told and "the run's best" in told[0] and "moving_backwards from 3.2 s" in told[0]
    summary = json.loads((run_dir / "round_00" / "summary_a0.json").read_text())
    assert summary["judge_disagrees"] is True and "moving_backwards" in summary["judge_note"]

    # Its calls count like the designer's; their records keep no image.
    calls = [row for row in run.llm_calls() if row["purpose"] == "judge"]
    assert len(calls) == 4 and all(row["completion_tokens"] > 0 for row in calls)
    assert result["llm_calls"] == 8
    for row in calls:
        assert "base64" not in (run_dir / row["response_path"]).read_text()

    # `show` and the report give the verdict beside the fitness, and the disagreement.
    view = load_view(run)
    judged = [c for c in view.candidates if c.judge_verdict()]
    assert any(
        "video judge: moving_backwards from 3.2 s" in (c.judge_verdict() or "") for c in judged
    )
    html = write_report(view, tmp_path / "report")[0].read_text()
    assert "<h2>Video judge</h2>" in html and "moving_backwards from 3.2 s" in html
    shown = CliRunner().invoke(app, ["show", str(run_dir), "--runs-dir", str(tmp_path)]).output
    assert "video judge: moving_backwards from 3.2 s" in shown  # one unwrapped line


@pytest.mark.slow
def test_a_malformed_verdict_is_stored_as_an_error_and_the_run_completes(
    tmp_path: Path, scripted_llm: Any
) -> None:
    server = scripted_llm(
        responder=lambda r: "Looks balanced to me!" if _is_judge(r) else GOOD_ALIVE
    )
    messages = Messages()
    config = _config(server, rounds=1, samples=1, judge_model=server.model, judge_top=1)
    result = start_run(config, tmp_path, reporter=messages)

    assert result["best_fitness"] is not None
    run = RunStore(tmp_path).open_run(result["run_dir"])
    verdict = run.candidate(CandidateKey(0, 0)).judge()
    assert verdict is not None and "no JSON object" in verdict["error"]
    assert verdict["reply"] == "Looks balanced to me!"
    assert any("video judge: no verdict" in line for line in messages.lines)
    assert not any("disagrees" in line for line in messages.lines)
    reflection = (Path(result["run_dir"]) / "round_00" / "cand_00" / "reflection.md").read_text()
    assert "video judge" not in reflection
    info = json.loads((Path(result["run_dir"]) / "run.json").read_text())
    assert info["status"] == "finished"
