"""`--judge human`: the run waits after each round's training while a person compares the round's
rollout videos in pairs on the judging page (`rewardsmith.judging`).

Every trained candidate of the round is filmed first (whatever `--videos` says). The page's
address, with its one-time token, is printed; the run goes on when the person presses "done",
at `--judge-timeout`, or on the first Ctrl-C of the wait, with the choices made so far (a second
Ctrl-C interrupts the run as anywhere else). Every choice and the written feedback are stored as
they are made, so kill -9 during the wait loses nothing: `resume` reopens the page on the same
round with the choices kept, and a round marked done (by the page or by that Ctrl-C) is not
asked again. The page shows the run's best so far beside the round's candidates, the anchor
that `--fitness human|blend` compares across rounds with (`selection_rule.py`). The round's
feedback reaches the next round's prompt (`designer`), and the scores go to the run's messages,
the round summary (with `--fitness human|blend`) and `show`.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from rewardsmith.choices import Judge
from rewardsmith.eureka_loop.state import CandidateSummary, Context
from rewardsmith.eureka_loop.videos import film_candidate
from rewardsmith.judging.prepare import open_session
from rewardsmith.judging.scores import fit_scores, ranked, score_line
from rewardsmith.judging.server import JudgingServer
from rewardsmith.runs.judgements import RoundJudgements

POLL_S = 0.5


def wait_for_person(
    ctx: Context,
    round_: int,
    trained: list[CandidateSummary],
    incumbent: CandidateSummary | None = None,
) -> None:
    """Serve the round's judging page and wait for the person (see the module's docstring)."""
    if ctx.config.judge != Judge.HUMAN or RoundJudgements(ctx.run.path, round_).done():
        return
    for candidate in [*trained, *([incumbent] if incumbent else [])]:
        film_candidate(ctx, candidate, force=True)  # once: a filmed folder is not filmed again
    try:
        session = open_session(ctx.run.path.parent, str(ctx.run.path), round_, film=False)
    except ValueError as why:
        ctx.reporter.message(f"no judging of round {round_}: {why}")
        return
    server = JudgingServer(session).start()
    timeout = ctx.config.judge_timeout_s
    ctx.reporter.message(
        f"round {round_} waits for your judgements: open {server.url} and press done"
        + (f" (it goes on by itself after {timeout:g} s;" if timeout else " (")
        + " Ctrl-C goes on with the choices so far)"
    )
    deadline = None if not timeout else time.monotonic() + timeout
    ctrl_c = threading.Event()
    try:
        with first_ctrl_c_sets(ctrl_c):
            while not session.done.wait(POLL_S):
                ctx.raise_if_cancelled()
                if ctrl_c.is_set():
                    session.files.mark_done(ended_by="ctrl-c")
                    ctx.reporter.message(
                        f"round {round_}: Ctrl-C; going on with the choices so far "
                        "(Ctrl-C again interrupts the run)"
                    )
                    break
                if deadline is not None and time.monotonic() > deadline:
                    ctx.reporter.message(f"round {round_}: judging timed out; going on")
                    break
    finally:
        server.stop()
    judgements = session.files.judgements()
    lines = [score_line(score) for score in ranked(fit_scores(judgements))]
    ctx.reporter.message(
        f"round {round_}: {len(judgements)} human choice(s); " + "; ".join(lines)
        if lines
        else f"round {round_}: no human choice was made"
    )


@contextmanager
def first_ctrl_c_sets(event: threading.Event) -> Iterator[None]:
    """Within: the first SIGINT sets `event` instead of interrupting, and puts the handler before
    it back at once, so a second Ctrl-C interrupts the run as it would anywhere else. SIGTERM and
    SIGHUP are left alone (they stop the run). A no-op off the main thread, where no signal
    arrives, and where SIGINT is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous in (signal.SIG_IGN, None):
        yield
        return

    def on_first(signum: int, frame: FrameType | None) -> Any:
        signal.signal(signal.SIGINT, previous)
        event.set()

    signal.signal(signal.SIGINT, on_first)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is on_first:
            signal.signal(signal.SIGINT, previous)
