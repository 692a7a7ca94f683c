"""The run store: the on-disk record of an evolution run (layout in `store.py`)."""

from rewardsmith.runs.schema import SCHEMA_VERSION, RunStoreError, read_record, write_record
from rewardsmith.runs.store import Run, RunStatus, RunStore, RunSummary

__all__ = [
    "SCHEMA_VERSION",
    "Run",
    "RunStatus",
    "RunStore",
    "RunStoreError",
    "RunSummary",
    "read_record",
    "write_record",
]
