"""The SQLite index of one run: its candidates, and every LLM call with its cost.

Files under the run directory hold the artifacts; this index answers the questions asked across
them (which candidates failed and why, what the run has cost) without reading every file. Like
simonw/llm's log database, its schema grows only through the ordered `MIGRATIONS`, and the number
applied is kept in `PRAGMA user_version`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardsmith.runs.schema import newer_version_error, now_iso

MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE candidates (
            round INTEGER NOT NULL,
            idx INTEGER NOT NULL,
            status TEXT,
            category TEXT,
            message TEXT,
            fitness REAL,
            success_rate REAL,
            reward_sha256 TEXT,
            parent TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (round, idx)
        )""",
        """CREATE TABLE llm_calls (
            id INTEGER PRIMARY KEY,
            round INTEGER,
            purpose TEXT NOT NULL,
            prompt_hash TEXT,
            model TEXT,
            prompt_tokens INTEGER,
            completion_tokens INTEGER,
            cost_usd REAL,
            latency_s REAL,
            attempts INTEGER,
            error TEXT,
            created_at TEXT NOT NULL,
            response_path TEXT
        )""",
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload JSON NOT NULL
        )""",
    ),
    (
        "ALTER TABLE candidates ADD COLUMN steps INTEGER",  # training steps it got
        "ALTER TABLE candidates ADD COLUMN rung INTEGER",  # halving: the rung it stopped at early
        "ALTER TABLE candidates DROP COLUMN reward_sha256",  # nothing wrote it
        "DROP TABLE events",  # nothing wrote it
    ),
    (
        # Each graph node's wall time (`eureka_loop/timing.py`): where a round's time goes.
        """CREATE TABLE node_times (
            id INTEGER PRIMARY KEY,
            round INTEGER NOT NULL,
            attempt INTEGER NOT NULL,
            node TEXT NOT NULL,
            wall_s REAL NOT NULL,
            created_at TEXT NOT NULL
        )""",
    ),
]
"""Each entry is one schema change; append new ones, never edit an applied one."""

CANDIDATE_FIELDS = frozenset(
    {
        "status",
        "category",
        "message",
        "fitness",
        "success_rate",
        "parent",
        "steps",
        "rung",
    }
)
LLM_CALL_FIELDS = (
    "prompt_hash",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
    "attempts",
    "error",
)


class RunIndex:
    """One connection behind a lock, because the orchestrator's nodes write from many threads."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            self.path, timeout=30, isolation_level=None, check_same_thread=False
        )
        try:
            self._conn.row_factory = sqlite3.Row
            if self._conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                self._conn.execute("PRAGMA journal_mode = WAL")  # once, by the store at creation
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._migrate()
        except BaseException:
            self._conn.close()
            raise

    def _migrate(self) -> None:
        """Apply pending migrations in one write transaction, so racing openers apply each once."""
        if self._user_version() == len(MIGRATIONS):
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            version = self._user_version()
            if version > len(MIGRATIONS):
                raise newer_version_error(self.path, version, len(MIGRATIONS))
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    self._conn.execute(statement)
            self._conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise

    def _user_version(self) -> int:
        version: int = self._conn.execute("PRAGMA user_version").fetchone()[0]
        return version

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(row) for row in self._conn.execute(sql, params)]

    def record_node_time(self, round: int, attempt: int, node: str, wall_s: float) -> None:
        """One graph node's wall time in round `round` (the finals and the evaluation: the
        last round's)."""
        with self._lock:
            self._conn.execute(
                "INSERT INTO node_times (round, attempt, node, wall_s, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (round, attempt, node, wall_s, now_iso()),
            )

    def node_times(self) -> list[dict[str, Any]]:
        """Every node's recorded wall time, in the order they ran."""
        return self._rows("SELECT round, attempt, node, wall_s FROM node_times ORDER BY id")

    def upsert_candidate(self, round: int, idx: int, **fields: Any) -> None:
        """Insert the candidate or update only the given fields, keeping the others."""
        unknown = set(fields) - CANDIDATE_FIELDS
        if unknown:
            raise ValueError(
                f"unknown candidate fields {sorted(unknown)}; known: {sorted(CANDIDATE_FIELDS)}"
            )
        now = now_iso()
        names = ["round", "idx", *fields, "created_at", "updated_at"]
        updates = [f"{name} = excluded.{name}" for name in [*fields, "updated_at"]]
        sql = (
            f"INSERT INTO candidates ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
            f"ON CONFLICT (round, idx) DO UPDATE SET {', '.join(updates)}"
        )
        with self._lock:
            self._conn.execute(sql, (round, idx, *fields.values(), now, now))

    def candidates(self, round: int | None = None) -> list[dict[str, Any]]:
        """Candidates in (round, idx) order, of one round or of all."""
        if round is None:
            return self._rows("SELECT * FROM candidates ORDER BY round, idx")
        return self._rows("SELECT * FROM candidates WHERE round = ? ORDER BY idx", (round,))

    def record_llm_call(
        self, round: int | None, purpose: str, call: Mapping[str, Any], response_path: str | None
    ) -> int:
        """Log one LLM call and return its id; keys of `call` other than the columns are ignored."""
        values = [call.get(name) for name in LLM_CALL_FIELDS]
        names = ["round", "purpose", *LLM_CALL_FIELDS, "created_at", "response_path"]
        sql = f"INSERT INTO llm_calls ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        with self._lock:
            cursor = self._conn.execute(sql, (round, purpose, *values, now_iso(), response_path))
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def llm_calls(self) -> list[dict[str, Any]]:
        """Every logged LLM call, oldest first."""
        return self._rows("SELECT * FROM llm_calls ORDER BY id")

    def totals(self) -> dict[str, Any]:
        """What the run has spent on LLM calls: tokens, dollars and number of calls."""
        (row,) = self._rows(
            "SELECT COALESCE(SUM(COALESCE(prompt_tokens, 0) + COALESCE(completion_tokens, 0)), 0)"
            " AS tokens, COALESCE(SUM(cost_usd), 0.0) AS cost_usd, COUNT(*) AS calls FROM llm_calls"
        )
        return row

    def close(self) -> None:
        """Close the connection; each write was committed as it was made, so none is lost."""
        with self._lock:
            self._conn.close()
