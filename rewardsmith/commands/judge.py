"""`rewardsmith judge RUN`: a person compares a round's rollout videos, two at a time, in a browser.

Films the round's trained candidates that have no video yet, serves the judging page on
127.0.0.1 (the printed URL carries the session's one-time token), and serves until the person
presses "done", Ctrl-C, or `--timeout`; then prints the human scores. Every choice and the written
feedback are stored in the round's folder as they are made (`round_RR/judgements.jsonl`,
`feedback.md`), and the next design round's prompt carries the feedback.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rewardsmith.commands.common import RunArgument, RunsDirOption, console, fail
from rewardsmith.commands.text import plain

if TYPE_CHECKING:
    from rewardsmith.runs.judgements import Judgement


def judge(
    run: RunArgument,
    round_: Annotated[
        int | None,
        typer.Option("--round", help="The round to judge (default: the last that trained).", min=0),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", help="The port on 127.0.0.1 (0: a free one).", min=0, max=65535)
    ] = 0,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Stop serving after this many seconds.", min=0),
    ] = None,
    film: Annotated[
        bool, typer.Option("--film/--no-film", help="Film trained candidates without a video.")
    ] = True,
    runs_dir: RunsDirOption = Path("runs"),
) -> None:
    """Judge a round's rollout videos in pairs in a browser; print the human scores."""
    from rewardsmith.judging.prepare import open_session
    from rewardsmith.judging.server import JudgingServer
    from rewardsmith.runs.schema import RunStoreError

    def say(message: str) -> None:
        console.print(plain(message), highlight=False, soft_wrap=True)

    try:
        session = open_session(runs_dir, run, round_, film=film, report=say)
    except (RunStoreError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    try:
        server = JudgingServer(session, port=port).start()
    except OSError as exc:
        fail(f"cannot serve on 127.0.0.1:{port}: {exc}", "choose another --port, or 0")
    say(f"judging round {session.round} of {session.run_id}; open this page (it holds a token):")
    console.print(server.url, highlight=False, soft_wrap=True, markup=False)
    say("press done on the page, or Ctrl-C here, to finish")
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while not session.done.wait(0.5):
            if deadline is not None and time.monotonic() > deadline:
                say("timed out")
                break
    except KeyboardInterrupt:
        say("interrupted; every choice so far is stored")
    finally:
        server.stop()
    print_scores(session.files.path.parent, session.round)


def print_scores(run_path: Path, round: int) -> None:
    """The round's human scores, best first, one line each."""
    from rewardsmith.runs.judgements import RoundJudgements

    print_round_scores(round, RoundJudgements(run_path, round).judgements())


def print_round_scores(round: int, judgements: list[Judgement]) -> None:
    """`human judgements of round R: N choice(s)`, then each candidate's Bradley-Terry score
    with its standard error, best first."""
    from rewardsmith.judging.scores import fit_scores, ranked, score_line

    console.print(
        f"human judgements of round {round}: {len(judgements)} choice(s)", highlight=False
    )
    for score in ranked(fit_scores(judgements)):
        console.print("  " + plain(score_line(score)), highlight=False, markup=False)
