"""The judging page in a real browser: a one-round CartPole run filmed with `--videos all`, the
server on 127.0.0.1 in a thread, headless Chromium (driven by selenium and Debian's
chromium-driver) plays both videos of each pair (duration > 0), clicks through every pair,
writes feedback and presses done; the stored choices, scores and feedback.md are then checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith.choices import SandboxChoice, Videos
from rewardsmith.cli import app
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.judging.pairs import round_contestants
from rewardsmith.judging.prepare import open_session
from rewardsmith.judging.scores import fit_scores
from rewardsmith.judging.server import JudgingServer
from rewardsmith.runs.judgements import RoundJudgements, feedback_for_design
from rewardsmith.runs.store import RunStore
from tests.judging.chromium import (
    AVAILABLE,
    WHY_NOT,
    click_and_wait_for_next_page,
    wait_for_videos,
)

pytestmark = pytest.mark.slow
needs_chromium = pytest.mark.skipif(not AVAILABLE, reason=WHY_NOT)


@pytest.fixture(scope="module")
def filmed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A one-round CartPole run whose three candidates were all filmed (~20 s)."""
    runs = tmp_path_factory.mktemp("runs")
    config = LoopConfig(
        task_id="cartpole",
        rounds=1,
        samples=3,
        steps=2048,
        eval_seeds=1,
        evaluate=False,
        videos=Videos.ALL,
        sandbox=SandboxChoice.PROCESS,
    )
    run_dir = Path(start_run(config, runs)["run_dir"])
    return runs, run_dir


@needs_chromium
def test_the_judge_command_serves_until_its_timeout_and_prints_the_scores(
    filmed_run: tuple[Path, Path],
) -> None:
    runs, run_dir = filmed_run
    RoundJudgements(run_dir, 0).append("r00c00", "r00c01", "left")
    try:
        result = CliRunner().invoke(
            app, ["judge", run_dir.name, "--runs-dir", str(runs), "--timeout", "1", "--no-film"]
        )
        shown = CliRunner().invoke(app, ["show", run_dir.name, "--runs-dir", str(runs)])
    finally:
        (run_dir / "round_00" / "judgements.jsonl").unlink()
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "judging round 0 of " + run_dir.name in flat
    assert "http://127.0.0.1:" in flat and "/?token=" in flat
    assert "timed out" in flat and "human judgements of round 0: 1 choice(s)" in flat
    assert "r00c00 score +" in flat and "r00c01 score -" in flat
    # `show` lists the human scores too
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert "human judgements of round 0: 1 choice(s)" in flat
    assert "r00c00 score +0.53 ± 0.77 (1 choice, 1 won)" in flat


@needs_chromium
def test_a_person_judges_every_pair_inrun_chromium(
    filmed_run: tuple[Path, Path], browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    runs, run_dir = filmed_run
    run = RunStore(runs).open_run(run_dir)
    contestants = round_contestants(run, 0)
    assert len(contestants) == 3 and all(c.video is not None for c in contestants)
    session = open_session(runs, str(run_dir), film=False)
    assert session.round == 0
    answers = ["left", "right", "both_bad"]
    with JudgingServer(session) as server:
        browser.get(server.url)
        for answer in answers:
            videos = wait_for_videos(browser)
            assert len(videos) == 2
            assert all(v["width"] > 0 for v in videos)
            shown = [
                e.get_attribute("data-key")
                for e in browser.find_elements(By.CSS_SELECTOR, "figure")
            ]
            assert len(set(shown)) == 2
            button = browser.find_element(By.ID, f"choose-{answer}")
            click_and_wait_for_next_page(browser, button)
        assert browser.find_element(By.ID, "remaining").text == "0"
        assert browser.find_elements(By.ID, "no-pair")
        browser.find_element(By.ID, "feedback").send_keys("Keep the cart near the centre. <b>")
        done = browser.find_element(By.ID, "finish")
        click_and_wait_for_next_page(browser, done)
        assert browser.find_element(By.ID, "done")
        assert session.done.is_set()
    stored = RoundJudgements(run_dir, 0)
    judgements = stored.judgements()
    assert [j.choice for j in judgements] == answers
    assert len({j.pair for j in judgements}) == 3
    assert stored.done() is not None
    assert stored.feedback() == "Keep the cart near the centre. <b>\n"
    scores = fit_scores(judgements, [c.key for c in contestants])
    assert all(s.score is not None and s.choices == 2 for s in scores.values())
    # the next design round's prompt takes the feedback
    assert feedback_for_design(run_dir, 1) == "Keep the cart near the centre. <b>"
