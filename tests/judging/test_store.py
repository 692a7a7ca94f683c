"""The judgement files: appended choices survive a reopened store and a torn last line; feedback
and the done flag; the feedback a design round's prompt takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.runs.judgements import (
    DESIGN_FEEDBACK,
    JUDGEMENTS,
    PENDING_FEEDBACK,
    RoundJudgements,
    add_pending_feedback,
    feedback_for_design,
    judged_rounds,
)
from rewardsmith.runs.schema import RunStoreError


def test_choices_survive_a_reopened_store(tmp_path: Path) -> None:
    store = RoundJudgements(tmp_path, 2)
    store.append("r02c00", "r02c01", "left")
    store.append("r02c01", "r02c02", "both_bad")
    again = RoundJudgements(tmp_path, 2).judgements()
    assert [(j.left, j.right, j.choice) for j in again] == [
        ("r02c00", "r02c01", "left"),
        ("r02c01", "r02c02", "both_bad"),
    ]
    assert all(j.at for j in again)
    assert judged_rounds(tmp_path) == [2]
    lines = (tmp_path / "round_02" / JUDGEMENTS).read_text().splitlines()
    assert json.loads(lines[0])["schema_version"] == 1


def test_a_torn_last_line_is_skipped_and_the_next_choice_starts_a_fresh_line(
    tmp_path: Path,
) -> None:
    store = RoundJudgements(tmp_path, 0)
    store.append("r00c00", "r00c01", "right")
    with (tmp_path / "round_00" / JUDGEMENTS).open("ab") as handle:
        handle.write(b'{"schema_version": 1, "left": "r00c0')  # the machine died mid-write
    assert len(store.judgements()) == 1
    store.append("r00c01", "r00c02", "left")
    assert [j.choice for j in RoundJudgements(tmp_path, 0).judgements()] == ["right", "left"]


def test_a_line_from_a_newer_rewardsmith_stops_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "round_00" / JUDGEMENTS
    path.parent.mkdir()
    path.write_text('{"schema_version": 99, "left": "a", "right": "b", "choice": "left"}\n')
    with pytest.raises(RunStoreError, match="newer"):
        RoundJudgements(tmp_path, 0).judgements()


def test_a_bad_choice_or_pair_is_refused(tmp_path: Path) -> None:
    store = RoundJudgements(tmp_path, 0)
    with pytest.raises(ValueError):
        store.append("a", "b", "tie")
    with pytest.raises(ValueError):
        store.append("a", "a", "left")
    assert store.judgements() == []


def test_feedback_and_done(tmp_path: Path) -> None:
    store = RoundJudgements(tmp_path, 1)
    assert store.feedback() is None and store.done() is None
    store.write_feedback("  the cart should stay centred \r\n")
    assert store.feedback() == "the cart should stay centred\n"
    store.append("r01c00", "r01c01", "left")
    store.mark_done()
    assert store.done() is not None and store.done()["choices"] == 1  # type: ignore[index]
    store.write_feedback("")
    assert store.feedback() is None
    assert not list((tmp_path / "round_01").glob(".*.tmp"))


def test_a_design_round_takes_the_previous_rounds_and_the_pending_feedback_once(
    tmp_path: Path,
) -> None:
    assert feedback_for_design(tmp_path, 0) is None
    RoundJudgements(tmp_path, 0).write_feedback("less jitter")
    add_pending_feedback(tmp_path, "keep the pole upright")
    add_pending_feedback(tmp_path, "and centred")
    text = feedback_for_design(tmp_path, 1)
    assert text == "less jitter\n\nkeep the pole upright\n\nand centred"
    assert not (tmp_path / PENDING_FEEDBACK).exists()
    assert (tmp_path / "round_01" / DESIGN_FEEDBACK).is_file()
    RoundJudgements(tmp_path, 0).write_feedback("changed later")
    assert feedback_for_design(tmp_path, 1) == text  # a resumed round asks the same
    assert feedback_for_design(tmp_path, 2) is None
    with pytest.raises(ValueError):
        add_pending_feedback(tmp_path, "   ")
