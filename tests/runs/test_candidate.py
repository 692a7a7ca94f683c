"""A candidate's key and folder: one place names its files and checks its records' versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.runs import SCHEMA_VERSION, RunStoreError
from rewardsmith.runs.candidate import (
    CandidateFiles,
    CandidateKey,
    candidates_on_disk,
)
from rewardsmith.runs.layout import OUTCOME
from rewardsmith.runs.store import RunStore


def test_a_key_round_trips_through_its_label_and_its_folder(tmp_path: Path) -> None:
    key = CandidateKey(1, 12)
    assert key.label == "r01c12" == str(key)
    assert CandidateKey.parse("r01c12") == key
    files = CandidateFiles(tmp_path, key)
    assert files.path == tmp_path / "round_01" / "cand_12"
    assert CandidateKey.of_dir(files.path) == key
    assert CandidateKey.find("llm/r01-design-r01c12.json") == key
    assert CandidateKey.of({"round": 1, "idx": 12, "status": "trained"}) == key
    assert {key: "a"}[CandidateKey(1, 12)] == "a"  # frozen: a dict key, as state merges by
    for bad in ("r1", "c01", "r01c", "round_01"):
        with pytest.raises(ValueError, match="not a candidate key"):
            CandidateKey.parse(bad)
    with pytest.raises(ValueError, match=">= 0"):
        CandidateKey(-1, 0)
    assert CandidateKey.of_dir(tmp_path / "round_01" / "stray") is None


def test_reading_creates_nothing_and_writing_versions_every_record(tmp_path: Path) -> None:
    files = CandidateFiles(tmp_path, CandidateKey(0, 3))
    assert files.outcome() is None and files.text("reward.py") is None
    assert not files.path.exists(), "reading must not create the folder"
    files.write_outcome({"ok": True, "fitness": 2.5})
    files.write_rung_outcome(0, {"ok": True, "steps": 10})
    files.write("reward.py", "def compute_reward(): ...\n")
    assert json.loads((files.path / OUTCOME).read_text())["schema_version"] == SCHEMA_VERSION
    assert files.outcome() == {"ok": True, "fitness": 2.5}
    assert files.rung_outcome(0) == {"ok": True, "steps": 10}
    assert files.reward_code() == "def compute_reward(): ...\n"
    assert [c.key for c in candidates_on_disk(tmp_path)] == [CandidateKey(0, 3)]


def test_records_of_a_run_from_before_versioning_still_read(tmp_path: Path) -> None:
    """outcome.json was written without schema_version before; such runs must stay readable
    (show, report, resume) rather than be refused as foreign."""
    files = CandidateFiles(tmp_path, CandidateKey(0, 0))
    files.path.mkdir(parents=True)
    (files.path / OUTCOME).write_text(json.dumps({"ok": True, "fitness": 1.0}))
    assert files.outcome() == {"ok": True, "fitness": 1.0}
    # A record that was always versioned and lost its version is not ours: refused, named.
    (files.path / "analysis.json").write_text(json.dumps({"hacking": {}}))
    with pytest.raises(RunStoreError, match="no schema_version"):
        files.analysis()
    (files.path / OUTCOME).write_text(json.dumps({"schema_version": 99, "ok": True}))
    with pytest.raises(RunStoreError, match="upgrade rewardsmith"):
        files.outcome()


def test_the_run_hands_out_its_candidates_and_evaluation_arms(tmp_path: Path) -> None:
    run = RunStore(tmp_path).create_run("cartpole", {}, ["test"], seed=0)
    files = run.candidate(CandidateKey(2, 1))
    assert files.path.is_dir() and files.key == CandidateKey(2, 1)
    arm = run.evaluation_arm("best", 0)
    assert arm.path == run.path / "evaluation" / "best_s0"
    with pytest.raises(ValueError, match="plain file name"):
        run.evaluation_arm("../escape", 0)
    run.close()
