"""`--judge human`: the run waits after a round's training while a person judges its videos on
the judging page; the person (a thread speaking HTTP to the real server on 127.0.0.1) clicks
through the pairs and writes feedback, and the next round's prompt carries it. A round marked
done is not asked again on resume, a page nobody opens times out, and Ctrl-C during the wait
goes on with the choices so far (selected on them with `--fitness human`)."""

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
            closing = client.post("/done", data=done)  # the closing page itself, no redirect
            assert closing.status_code == 200 and "Judging this round is done" in closing.text

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
    # Round 0: its two candidates, one pair; round 1: its two and the best so far, three pairs.
    for round_, pairs in ((0, 1), (1, 3)):
        judged = RoundJudgements(run_dir, round_)
        assert judged.done() and len(judged.judgements()) == pairs
        assert (run_dir / f"round_{round_:02d}").glob("cand_*/rollout.mp4")
    incumbent = result["history"][0]["best"]
    assert any(incumbent in j.pair for j in RoundJudgements(run_dir, 1).judgements())
    assert any("1 human choice(s)" in line for line in person.lines)
    # Round 1's designer prompt carries what the person wrote about round 0.
    round_1 = [r for r in server.requests if FEEDBACK in str(r["messages"])]
    assert round_1, "the feedback never reached the designer"


@pytest.mark.slow
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


def _start_cli(server: Any, runs: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """`rewardsmith run` on CartPole with `--judge human` in its own process group, as in a
    terminal (SIGINT at its default, whatever the test runner's is); returns it once it prints
    the judging page's address, with that address."""
    command = [
        *(sys.executable, "-m", "rewardsmith.cli", "run", "cartpole"),
        *("--model", server.model, "--api-base", server.base_url),
        *("--rounds", "1", "--steps", "2048", "--no-evaluate"),
        *("--judge", "human", "--videos", "none", "--sandbox", "process"),
        *("--runs-dir", str(runs), *extra),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARDSMITH_")}
    env["COLUMNS"] = "500"  # the page's address on one line
    process = subprocess.Popen(
        command,
        start_new_session=True,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdout is not None
    for line in process.stdout:
        if found := re.search(r"open (http://\S+) and press done", line):
            return process, found.group(1)
    process.wait()
    raise AssertionError("the run never offered its judging page")


@pytest.mark.slow
def test_ctrl_c_during_the_wait_goes_on_with_the_choices_so_far(
    tmp_path: Path, scripted_llm: Any
) -> None:
    """One choice of three pairs, then Ctrl-C (SIGINT to the run's process group): the run
    stops waiting, selects on that one choice (`--fitness human`: its winner is the best) and
    finishes; the round is marked done, so a resume would not ask again."""
    from rewardsmith.runs.views import open_view

    server = scripted_llm(default_reply=GOOD_UPRIGHT, script=[GOOD_ALIVE])
    process, url = _start_cli(server, tmp_path, "--samples", "3", "--fitness", "human")
    try:
        Person(judge=False).choose_once(url)
        os.killpg(process.pid, signal.SIGINT)
        rest, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    flat = " ".join(rest.split())
    assert process.returncode == 0, rest[-3000:]
    assert "round 0: Ctrl-C; going on with the choices so far" in flat
    run_dir = next(p for p in tmp_path.iterdir() if (p / "run.json").exists())
    judged = RoundJudgements(run_dir, 0)
    [choice] = judged.judgements()
    assert (judged.done() or {}).get("ended_by") == "ctrl-c"
    view = open_view(run_dir, tmp_path)
    assert view.status == "finished"
    summary = view.rounds[0].summary or {}
    assert summary["selected_on"] == "human" and summary["best"] == choice.left
    assert summary["human_scores"][choice.left] > summary["human_scores"][choice.right]
