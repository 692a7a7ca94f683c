"""benchmarks/hacking_training_flag.py: both rules from a run's kept checkpoints, and which
flags the candidate's own evaluator contradicts."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rewardsmith.atomic import write_record
from rewardsmith.runs import layout
from rewardsmith.runs.candidate import CandidateFiles, CandidateKey
from tests.benchmarks.scripts import load_script


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return load_script("hacking_training_flag")


def outcome(successes: list[int], evaluated: float) -> dict[str, Any]:
    """A trained candidate's outcome: 5 episodes per checkpoint, the return rising throughout."""
    return {
        "ok": True,
        "fitness": evaluated,
        "checkpoints": [
            {
                "step": 1000 * (i + 1),
                "fitness": won / 5,
                "fitness_per_episode": [1.0] * won + [0.0] * (5 - won),
                "reward_return": 100.0 * (i + 1),
            }
            for i, won in enumerate(successes)
        ],
    }


def test_noise_and_real_falls_are_told_apart_and_checked_against_the_evaluator(
    script: ModuleType, tmp_path: Path
) -> None:
    run = tmp_path / "runs" / "run-a"
    run.mkdir(parents=True)
    write_record(run / layout.RUN_INFO, {"task": "metaworld-reach"})
    noisy = outcome([0, 0, 1, 0, 1, 2, 3, 1, 0, 3], evaluated=0.8)  # "fell" 0.3 within noise
    real = outcome([0, 1, 3, 5, 5, 4, 2, 1, 1, 0], evaluated=0.1)  # 1.0 to 0.1
    for index, record in enumerate([noisy, real]):
        CandidateFiles(run, CandidateKey(0, index)).write_outcome(record)

    rows = script.candidate_rows([tmp_path / "runs"])
    assert [(r["candidate"], r["flag_any_fall"], r["flag_beyond_noise"]) for r in rows] == [
        ("r00c00", True, False),
        ("r00c01", True, True),
    ]
    assert script.contradicted(rows[0]) and not script.contradicted(rows[1])
    total = script.summary(rows)[-1]
    assert total == {
        "task": "all",
        "candidates": 2,
        "flag_any_fall": 2,
        "flag_any_fall_contradicted": 1,
        "flag_beyond_noise": 1,
        "flag_beyond_noise_contradicted": 0,
    }
