"""The run store: the on-disk record of an evolution run (layout in `store.py`)."""

from rewardsmith.runs.candidate import (
    CandidateFiles,
    CandidateKey,
    TrainingFiles,
)
from rewardsmith.runs.schema import SCHEMA_VERSION, RunStoreError, read_record, write_record
from rewardsmith.runs.store import Run, RunStatus, RunStore, RunSummary

__all__ = [
    "SCHEMA_VERSION",
    "CandidateFiles",
    "CandidateKey",
    "Run",
    "RunStatus",
    "RunStore",
    "RunStoreError",
    "RunSummary",
    "TrainingFiles",
    "read_record",
    "write_record",
]
