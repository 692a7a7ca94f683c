"""`rewardsmith feedback RUN "text"`: notes for the run's next design round.

For a run that is paused or was interrupted: the text waits in `feedback_next.md` at the run's top
level, and the next design round's prompt carries it (then it is kept with that round, in
`round_RR/human_feedback.md`, and not repeated later). Given twice, both notes are kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rewardsmith.commands.common import RunArgument, RunsDirOption, console, fail
from rewardsmith.commands.text import plain


def feedback(
    run: RunArgument,
    text: Annotated[str, typer.Argument(help="What the next round's designer should know.")],
    runs_dir: RunsDirOption = Path("runs"),
) -> None:
    """Store feedback that the run's next design round's prompt carries."""
    from rewardsmith.runs.judgements import add_pending_feedback
    from rewardsmith.runs.schema import RunStoreError
    from rewardsmith.runs.store import RunStore

    try:
        opened = RunStore(runs_dir).open_run(run)
        path = add_pending_feedback(opened.path, text)
    except (RunStoreError, ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    console.print(
        plain(f"stored for the next design round of {opened.run_id}: {path}"),
        highlight=False,
        soft_wrap=True,
    )
