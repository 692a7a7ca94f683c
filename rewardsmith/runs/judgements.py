"""A person's judgements of a round's rollout videos, and their written feedback: run-store files.

Layout (beside the round's candidates):

    round_RR/judgements.jsonl     one JSON line per choice, appended (and fsynced) as it is made
    round_RR/feedback.md          the round's written feedback (replaced atomically)
    round_RR/judging_done.json    written when the person pressed "done" (or ended a run's wait
                                  with Ctrl-C: `"ended_by": "ctrl-c"`)
    round_RR/human_feedback.md    what the next design was told: the previous round's feedback and
                                  any pending feedback, fixed once so a resumed round asks the same
    feedback_next.md              feedback for the next round given outside a judging session
                                  (`rewardsmith feedback`), until a design round takes it

It lives in the run store, not in `rewardsmith.judging`: the loop's designer, `show` and the CLI read
these files too, and the run store is the layer all of them may import (the judging server, which
imports the loop to film candidates, is one more writer). Nothing is lost if the server or the
machine dies: a choice is on disk before the page moves on, a torn last line (a write cut short) is
skipped on reading, and the next append starts on a fresh line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.atomic import SCHEMA_VERSION, RecordVersionError, fsync_dir, record_body, to_json
from rewardsmith.runs.atomic import write_text
from rewardsmith.runs.layout import DESIGN_FEEDBACK, JUDGEMENTS, JUDGING_DONE, PENDING_FEEDBACK
from rewardsmith.runs.layout import ROUND_FEEDBACK as FEEDBACK
from rewardsmith.runs.schema import RunStoreError, now_iso, read_record, write_record

CHOICES = ("left", "right", "both_bad")
"""What a person can answer about a pair: which video is better, or that both are bad."""

MAX_FEEDBACK_CHARS = 20_000
"""Written feedback goes into the designer's prompt: long enough for notes, not for a novel."""


@dataclass(frozen=True)
class Judgement:
    """One choice between two videos: the keys shown left and right, the answer, and when."""

    left: str
    right: str
    choice: str
    at: str

    @property
    def pair(self) -> frozenset[str]:
        """The two keys, unordered: a pair is judged once per round, whichever side each was on."""
        return frozenset((self.left, self.right))


def round_path(run_path: Path, round: int) -> Path:
    """`round_RR/` of the run at `run_path`, without creating it (readers never write)."""
    if round < 0:
        raise ValueError(f"a round is >= 0, not {round}")
    return Path(run_path) / f"round_{round:02d}"


class RoundJudgements:
    """The judgement files of one round of the run at `run_path`."""

    def __init__(self, run_path: Path, round: int) -> None:
        self.round = round
        self.path = round_path(run_path, round)

    def judgements(self) -> list[Judgement]:
        """Every stored choice, oldest first; a line that does not parse (a write cut short by a
        crash) is skipped, a line from a newer rewardsmith stops with `RunStoreError`."""
        try:
            data = (self.path / JUDGEMENTS).read_bytes()
        except FileNotFoundError:
            return []
        found = []
        for line in data.split(b"\n"):
            judgement = _parse_line(line, self.path / JUDGEMENTS)
            if judgement is not None:
                found.append(judgement)
        return found

    def append(self, left: str, right: str, choice: str) -> Judgement:
        """Store one choice durably (appended, fsynced) before returning it."""
        if choice not in CHOICES:
            raise ValueError(f"a choice is one of {', '.join(CHOICES)}, not {choice!r}")
        if left == right:
            raise ValueError("a pair holds two different candidates")
        judgement = Judgement(left=left, right=right, choice=choice, at=now_iso())
        record = {"schema_version": SCHEMA_VERSION, **judgement.__dict__}
        line = (to_json(record) + "\n").encode("utf-8")
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.path / JUDGEMENTS
        created = not target.exists()
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(target, flags, 0o644)
        try:
            if not created and _ends_torn(fd):
                line = b"\n" + line  # end the torn line, so this one parses on its own
            os.write(fd, line)  # one write of a short line: appended whole
            os.fsync(fd)
        finally:
            os.close(fd)
        if created:
            fsync_dir(self.path)
        return judgement

    def feedback(self) -> str | None:
        """The round's written feedback, or None where none was written."""
        try:
            return (self.path / FEEDBACK).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def write_feedback(self, text: str) -> Path:
        """Replace the round's written feedback (atomically); empty text removes it."""
        text = _clean_feedback(text)
        path = self.path / FEEDBACK
        if not text:
            path.unlink(missing_ok=True)
            return path
        self.path.mkdir(parents=True, exist_ok=True)
        write_text(path, text + "\n")
        return path

    def done(self) -> dict[str, Any] | None:
        """The record written when the person pressed "done", or None while judging goes on."""
        try:
            return read_record(self.path / JUDGING_DONE)
        except FileNotFoundError:
            return None

    def mark_done(self, **fields: Any) -> Path:
        """Record that judging this round is over (the time, and any `fields`)."""
        self.path.mkdir(parents=True, exist_ok=True)
        path = self.path / JUDGING_DONE
        write_record(path, {"at": now_iso(), "choices": len(self.judgements()), **fields})
        return path


def judged_rounds(run_path: Path) -> list[int]:
    """The rounds of the run that hold at least one stored choice, in order."""
    rounds = []
    for path in Path(run_path).glob(f"round_*/{JUDGEMENTS}"):
        name = path.parent.name
        if name.startswith("round_") and name[6:].isdigit():
            rounds.append(int(name[6:]))
    return sorted(rounds)


def pending_feedback(run_path: Path) -> str | None:
    """Feedback given with `rewardsmith feedback` that no design round has taken yet."""
    try:
        return (Path(run_path) / PENDING_FEEDBACK).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def add_pending_feedback(run_path: Path, text: str) -> Path:
    """Add `text` to the feedback the run's next design round takes (atomically replaced)."""
    text = _clean_feedback(text)
    if not text:
        raise ValueError("the feedback is empty")
    earlier = (pending_feedback(run_path) or "").strip()
    path = Path(run_path) / PENDING_FEEDBACK
    write_text(path, (earlier + "\n\n" + text if earlier else text) + "\n")
    return path


def feedback_for_design(run_path: Path, round: int) -> str | None:
    """The human feedback round `round`'s design prompt carries: the previous round's written
    feedback and any pending feedback, or None where there is none.

    The first call for a round fixes it in `round_RR/human_feedback.md` and takes the pending
    feedback away (so later rounds do not repeat it); a resumed round reads the same text back.
    """
    fixed = round_path(run_path, round) / DESIGN_FEEDBACK
    try:
        return fixed.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        pass
    parts = []
    if round > 0:
        parts.append(RoundJudgements(run_path, round - 1).feedback())
    parts.append(pending_feedback(run_path))
    text = "\n\n".join(p.strip() for p in parts if p and p.strip())
    if not text:
        return None
    fixed.parent.mkdir(parents=True, exist_ok=True)
    write_text(fixed, text + "\n")
    (Path(run_path) / PENDING_FEEDBACK).unlink(missing_ok=True)
    return text


def _clean_feedback(text: str) -> str:
    text = text.replace("\r\n", "\n").strip()
    if len(text) > MAX_FEEDBACK_CHARS:
        raise ValueError(f"feedback is limited to {MAX_FEEDBACK_CHARS} characters")
    return text


def _ends_torn(fd: int) -> bool:
    """Whether the file ends without a newline: its last write was cut short."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _parse_line(line: bytes, path: Path) -> Judgement | None:
    if not line.strip():
        return None
    try:
        record = json.loads(line)
        body = record_body(record)
    except RecordVersionError as e:
        if e.newer is not None:
            raise RunStoreError(
                f"{path} has a line of schema version {e.newer}, newer than {SCHEMA_VERSION}; "
                "upgrade rewardsmith to read this run"
            ) from None
        return None
    except ValueError:
        return None  # torn: a write the crash cut short
    fields = [body.get(name) for name in ("left", "right", "choice", "at")]
    if not all(isinstance(f, str) for f in fields) or body["choice"] not in CHOICES:
        return None
    return Judgement(left=body["left"], right=body["right"], choice=body["choice"], at=body["at"])
