"""`--judge human`: the run waits after a round's training while a person judges its videos on
the judging page; the person (a thread speaking HTTP to the real server on 127.0.0.1) clicks
through the pairs and writes feedback, and the next round's prompt carries it. A round marked
done is not asked again on resume, and a page nobody opens times out."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from rewardsmith.eureka_loop.reporter import NullReporter
from rewardsmith.eureka_loop.runner import resume_run, start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.judgements import RoundJudgements
from tests.eureka_loop.rewards import GOOD_ALIVE, GOOD_UPRIGHT

FEEDBACK = "keep the cart near the centre of the track"


class Person(NullReporter):
    """Keeps the run's messages; when one gives the judging page's address, judges every pair
    (always the left one) and writes feedback, in a thread, as a person in a browser would."""

    def __init__(self, judge: bool = True) -> None:
        self.lines: list[str] = []
        self.judge = judge
        self.threads: list[threading.Thread] = []

    def message(self, text: str) -> None:
        self.lines.append(text)
        address = re.search(r"open (http://\S+) and press done", text)
        if address and self.judge:
            thread = threading.Thread(target=self._judge, args=(address.group(1),))
            thread.start()
            self.threads.append(thread)

    def _judge(self, url: str) -> None:
        while self.choose_once(url):
            pass
        with _client(url) as client:
            fields = _fields(client.get(url).text)
            done = {k: fields[k] for k in ("token", "csrf")} | {"text": FEEDBACK}
            assert client.post("/done", data=done).status_code == 303

    @staticmethod
    def choose_once(url: str) -> bool:
        """Pick the left video of the pair shown; False where no pair is left."""
        with _client(url) as client:
            fields = _fields(client.get(url).text)
            if "left" not in fields:
                return False
            form = {**fields, "choice": "left", "text": FEEDBACK}
            assert client.post("/choose", data=form).status_code == 303
            return True


def _client(url: str) -> httpx.Client:
    base = url.split("/?")[0]
    return httpx.Client(base_url=base, headers={"Origin": base, "Sec-Fetch-Site": "same-origin"})


def _fields(page: str) -> dict[str, str]:
    return dict(re.findall(r"name='(\w+)' value='([^']*)'", page))


def _config(server: Any, **overrides: Any) -> LoopConfig:
    settings: dict[str, Any] = dict(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=2,
        samples=2,
        steps=2048,
        evaluate=False,
        sandbox="process",
        videos="none",
        judge="human",
        judge_timeout_s=120,
    )
    return LoopConfig(**{**settings, **overrides})


@pytest.mark.slow
def test_the_run_waits_for_the_person_and_the_next_round_hears_the_feedback(
    tmp_path: Path, scripted_llm: Any
) -> None:
    server = scripted_llm(default_reply=GOOD_UPRIGHT, script=[GOOD_UPRIGHT, GOOD_ALIVE])
    person = Person()
    result = start_run(_config(server), tmp_path, reporter=person)
    for thread in person.threads:
        thread.join(10)
    run_dir = Path(result["run_dir"])
    assert [h["round"] for h in result["history"]] == [0, 1]
    for round_ in (0, 1):
        judged = RoundJudgements(run_dir, round_)
        assert judged.done() and len(judged.judgements()) == 1  # two candidates: one pair
        assert (run_dir / f"round_{round_:02d}").glob("cand_*/rollout.mp4")
    assert any("1 human choice(s)" in line for line in person.lines)
    # Round 1's designer prompt carries what the person wrote about round 0.
    round_1 = [r for r in server.requests if FEEDBACK in str(r["messages"])]
    assert round_1, "the feedback never reached the designer"


def test_a_page_nobody_opens_times_out_and_the_run_goes_on(
    tmp_path: Path, scripted_llm: Any
) -> None:
    server = scripted_llm(default_reply=GOOD_UPRIGHT, script=[GOOD_UPRIGHT, GOOD_ALIVE])
    person = Person(judge=False)
    config = _config(server, rounds=1, judge_timeout_s=1)
    result = start_run(config, tmp_path, reporter=person)
    assert result["best_fitness"] is not None
    assert any("judging timed out" in line for line in person.lines)
    assert any("no human choice was made" in line for line in person.lines)
    assert not RoundJudgements(Path(result["run_dir"]), 0).done()


@pytest.mark.slow
def test_kill_9_during_the_wait_then_resume_keeps_the_choices_and_repeats_nothing(
    tmp_path: Path, scripted_llm: Any
) -> None:
    """The run is killed while it waits on the page, after one choice of three pairs; `resume`
    reopens the page on the same round with that choice kept, retrains nothing and asks the
    model nothing again."""
    server = scripted_llm(default_reply=GOOD_UPRIGHT)
    command = [
        *(sys.executable, "-m", "rewardsmith.cli", "run", "cartpole"),
        *("--model", server.model, "--api-base", server.base_url),
        *("--rounds", "1", "--samples", "3", "--steps", "2048", "--no-evaluate"),
        *("--judge", "human", "--videos", "none", "--sandbox", "process"),
        *("--runs-dir", str(tmp_path)),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSMITH_")}
    env["COLUMNS"] = "500"  # the page's address on one line
    first = subprocess.Popen(
        command, start_new_session=True, env=env, stdout=subprocess.PIPE, text=True
    )
    assert first.stdout is not None
    url = None
    for line in first.stdout:
        if found := re.search(r"open (http://\S+) and press done", line):
            url = found.group(1)
            break
    assert url, "the run never offered its judging page"
    Person(judge=False).choose_once(url)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    run_dir = next(p for p in tmp_path.iterdir() if (p / "run.json").exists())
    kept = RoundJudgements(run_dir, 0).judgements()
    assert len(kept) == 1 and not RoundJudgements(run_dir, 0).done()
    outcomes = {p: p.stat().st_mtime_ns for p in run_dir.glob("round_00/cand_*/outcome.json")}
    assert len(outcomes) == 3
    calls = server.request_count

    person = Person()
    result = resume_run(run_dir, tmp_path, reporter=person)
    for thread in person.threads:
        thread.join(10)
    judged = RoundJudgements(run_dir, 0)
    assert judged.done() and len(judged.judgements()) == 3  # the kept one, and the two left
    assert judged.judgements()[0] == kept[0]
    assert server.request_count == calls  # no design call repeated
    assert {p: p.stat().st_mtime_ns for p in outcomes} == outcomes  # nothing retrained
    assert result["best_fitness"] is not None
