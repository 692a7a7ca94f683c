"""`--judge human`: the run waits after each round's training while a person compares the round's
rollout videos in pairs on the judging page (`rewardsmith.judging`).

Every trained candidate of the round is filmed first (whatever `--videos` says). The page's
address, with its one-time token, is printed; the run goes on when the person presses "done",
or at `--judge-timeout`, with the choices made so far. Every choice and the written feedback are
stored as they are made, so Ctrl-C or kill -9 during the wait loses nothing: `resume` reopens
the page on the same round with the choices kept, and a round marked done is not asked again.
The round's feedback reaches the next round's prompt (`designer`), and the scores go to the
run's messages and `show`.
"""

from __future__ import annotations

import time

from rewardsmith.choices import Judge
from rewardsmith.eureka_loop.state import CandidateSummary, Context
from rewardsmith.eureka_loop.videos import film_candidate
from rewardsmith.judging.prepare import open_session
from rewardsmith.judging.scores import fit_scores, ranked, score_line
from rewardsmith.judging.server import JudgingServer
from rewardsmith.runs.judgements import RoundJudgements

POLL_S = 0.5


def wait_for_person(ctx: Context, round_: int, trained: list[CandidateSummary]) -> None:
    """Serve the round's judging page and wait for the person (see the module's docstring)."""
    if ctx.config.judge != Judge.HUMAN or RoundJudgements(ctx.run.path, round_).done():
        return
    for candidate in trained:
        film_candidate(ctx, candidate, force=True)
    try:
        session = open_session(ctx.run.path.parent, str(ctx.run.path), round_, film=False)
    except ValueError as why:
        ctx.reporter.message(f"no judging of round {round_}: {why}")
        return
    server = JudgingServer(session).start()
    timeout = ctx.config.judge_timeout_s
    ctx.reporter.message(
        f"round {round_} waits for your judgements: open {server.url} and press done"
        + (f" (it goes on by itself after {timeout:g} s)" if timeout else "")
    )
    deadline = None if not timeout else time.monotonic() + timeout
    try:
        while not session.done.wait(POLL_S):
            ctx.raise_if_cancelled()
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
