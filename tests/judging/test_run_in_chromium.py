"""The human in the loop, end to end: `rewardsmith run cartpole --judge human --fitness human`
(tiny budgets, the scripted model on 127.0.0.1) completes two rounds judged in headless Chromium.

The person in the browser watches each pair load and always prefers the less fit policy, so
selection on the human scores visibly departs from selection on task fitness. Round 1's page
shows round 0's best beside the new candidates (the anchor between rounds); the feedback typed
on round 0's page reaches round 1's prompt; `show` lists every round's human scores."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.judging.scores import fit_scores, ranked
from rewardsmith.runs.judgements import RoundJudgements
from rewardsmith.runs.views import open_view
from tests.eureka_loop.rewards import GOOD_ALIVE, GOOD_UPRIGHT
from tests.judging.chromium import (
    AVAILABLE,
    WHY_NOT,
    click_and_wait_for_next_page,
    wait_for_videos,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not AVAILABLE, reason=WHY_NOT)]

FEEDBACK = (
    "Round 0: the pole wobbles; keep the cart near the centre of the track.",
    "Round 1: better, but it still drifts to the right.",
)
PAGE = re.compile(r"open (http://\S+) and press done")


def _start_run(server: Any, runs: Path) -> subprocess.Popen[str]:
    command = [
        *(sys.executable, "-m", "rewardsmith.cli", "run", "cartpole"),
        *("--model", server.model, "--api-base", server.base_url),
        *("--rounds", "2", "--samples", "2", "--steps", "2048", "--no-evaluate"),
        *("--judge", "human", "--fitness", "human", "--judge-timeout", "300"),
        *("--videos", "none", "--sandbox", "process", "--runs-dir", str(runs)),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSMITH_")}
    env["COLUMNS"] = "500"  # the page's address on one line
    return subprocess.Popen(
        command,
        start_new_session=True,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _next_page(process: subprocess.Popen[str], seen: list[str]) -> str:
    """Read the run's output up to its next judging page's address."""
    assert process.stdout is not None
    for line in process.stdout:
        seen.append(line)
        if found := PAGE.search(line):
            return found.group(1)
    process.wait()
    raise AssertionError("the run offered no judging page:\n" + "".join(seen)[-3000:])


def _judge_round(driver: Any, url: str, feedback: str) -> None:
    """Play a person: watch each pair load, prefer the less fit policy, write feedback, done."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    while not driver.find_elements(By.ID, "no-pair"):
        assert len(wait_for_videos(driver)) == 2
        captions = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "figcaption")]
        left, right = (float(re.search(r"fitness (\S+)", c)[1]) for c in captions)  # type: ignore[index]
        button = driver.find_element(By.ID, "choose-left" if left <= right else "choose-right")
        click_and_wait_for_next_page(driver, button)
    driver.find_element(By.ID, "feedback").send_keys(feedback)
    finish = driver.find_element(By.ID, "finish")
    click_and_wait_for_next_page(driver, finish)
    # The finish is answered with the closing page itself: the run stops serving at once.
    assert WebDriverWait(driver, 20).until(lambda d: d.find_elements(By.ID, "done"))


def test_two_rounds_judged_in_chromium_select_on_the_human_scores(
    tmp_path: Path, scripted_llm: Any, browser: Any
) -> None:
    server = scripted_llm(default_reply=GOOD_UPRIGHT, script=[GOOD_UPRIGHT, GOOD_ALIVE])
    process = _start_run(server, tmp_path)
    seen: list[str] = []
    try:
        for feedback in FEEDBACK:
            _judge_round(browser, _next_page(process, seen), feedback)
        rest, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    seen.append(rest)
    assert process.returncode == 0, "".join(seen)[-3000:]

    run_dir = next(p for p in tmp_path.iterdir() if (p / "run.json").exists())
    view = open_view(run_dir, tmp_path)
    assert view.status == "finished" and [r.round for r in view.rounds] == [0, 1]
    fitness = {c.key: c.fitness or 0.0 for c in view.candidates}
    for round_, pairs in ((0, 1), (1, 3)):  # round 1: its two candidates and round 0's best
        judged = RoundJudgements(run_dir, round_)
        choices = judged.judgements()
        assert len(choices) == pairs and judged.done() is not None
        assert judged.feedback() == FEEDBACK[round_] + "\n"
        summary = view.rounds[round_].summary or {}
        assert summary["fitness"] == "human" and summary["selected_on"] == "human"
        assert summary["selection_note"] is None
        # The run's best is the person's favourite, the least fit policy on the page.
        top = ranked(fit_scores(choices))[0]
        assert summary["best"] == top.key
        assert set(summary["human_scores"]) == {k for j in choices for k in j.pair}
        on_page = {k for j in choices for k in j.pair}
        assert fitness[top.key] == min(fitness[k] for k in on_page)
    incumbent = view.rounds[0].summary["best"]  # type: ignore[index]
    assert any(incumbent in j.pair for j in RoundJudgements(run_dir, 1).judgements())

    # Round 1's prompts (the third and fourth calls) carry round 0's feedback; round 0's did not.
    carrying = [i for i, r in enumerate(server.requests) if FEEDBACK[0] in str(r["messages"])]
    assert carrying and min(carrying) >= 2
    assert not any(FEEDBACK[1] in str(r["messages"]) for r in server.requests)

    shown = CliRunner().invoke(app, ["show", run_dir.name, "--runs-dir", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert "human judgements of round 0: 1 choice(s)" in flat
    assert "human judgements of round 1: 3 choice(s)" in flat
    assert f"{incumbent} score" in flat.split("human judgements of round 1")[1]
    assert "selected on human scores" in flat
