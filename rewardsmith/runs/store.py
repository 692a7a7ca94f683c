"""The run store: one directory per evolution run, with all it takes to inspect or resume it.

Layout of `<root>/<run-id>/`:

    run.json            command, config, model, package versions, seed, status, owner, summary
    index.sqlite        candidates, LLM calls (tokens, cost, timing); see `index.py`
    state.sqlite        the LangGraph checkpointer's database
    llm/<key>.json      every LLM reply, saved before it is used, so a resume never pays twice
    round_RR/           round-level files, e.g. the reflection fed to the next round
    round_RR/cand_II/   one candidate's files (layout in `candidate.py`)
    evaluation/         the final evaluation: `evaluation.json` and a folder per reward and seed

Run ids are `YYYYmmdd-HHMMSS-<task>-<4 hex>` in local time, so `ls runs/` reads in start order.
"""

from __future__ import annotations

import logging
import os
import platform
import re
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, get_args

from rewardsmith import __version__
from rewardsmith.processes import current_process, is_alive
from rewardsmith.runs import layout
from rewardsmith.runs.atomic import fsync_dir
from rewardsmith.runs.candidate import CandidateFiles, CandidateKey, TrainingFiles
from rewardsmith.runs.index import RunIndex
from rewardsmith.runs.schema import RunStoreError, now_iso, read_record, write_file, write_record

logger = logging.getLogger(__name__)

RunStatus = Literal["running", "finished", "interrupted", "failed"]
STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
OFFLINE_DESIGNER = "offline designer"
_PACKAGES = ("numpy", "torch", "gymnasium", "stable-baselines3", "litellm", "langgraph")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ID_ATTEMPTS = 100


@dataclass(frozen=True)
class RunSummary:
    """One line of a run listing, read from run.json alone so listing stays fast."""

    run_id: str
    task: str
    model: str
    rounds_done: int
    best_fitness: float | None
    human_normalized_score: float | None
    cost_usd: float
    status: RunStatus
    created_at: str
    path: Path


class Run:
    """One run directory: its records, its candidates' files, its index and its reply cache.

    Safe to share between threads; call `close` (or use it as a context manager) to release the
    index connection.
    """

    def __init__(self, path: Path) -> None:
        # Absolute, so that file URIs (the read-only index) and printed paths work from a
        # relative --runs-dir such as the default `runs`.
        self.path = Path(path).absolute()
        self._lock = threading.Lock()
        self._index: RunIndex | None = None

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def run_id(self) -> str:
        """The run folder's name (`YYYYmmdd-HHMMSS-<task>-<4 hex>`), what commands take as RUN."""
        return self.path.name

    @property
    def checkpoint_db_path(self) -> Path:
        """Where the LangGraph SQLite checkpointer keeps the graph state."""
        return self.path / layout.CHECKPOINT_DB

    @property
    def index_path(self) -> Path:
        """`index.sqlite`, the candidates and LLM calls; opened on the first query, not here."""
        return self.path / layout.INDEX_DB

    @property
    def llm_dir(self) -> Path:
        """`llm/`: each reply saved under its key before it is used (`save_reply`)."""
        return self.path / layout.LLM_DIR

    @property
    def evaluation_dir(self) -> Path:
        """The final evaluation: one folder per retrained reward and seed, and its report."""
        return self.path / layout.EVALUATION_DIR

    @property
    def evaluation_file(self) -> Path:
        """The final evaluation's report; absent until the evaluation has finished."""
        return self.evaluation_dir / layout.EVALUATION_REPORT

    @property
    def finals_file(self) -> Path:
        """The finals' report (`eureka_loop/finals.py`); absent where no finals were played."""
        return self.path / layout.FINALS_REPORT

    def evaluation_arm(self, name: str, seed_index: int) -> TrainingFiles:
        """The folder the final evaluation trains reward `name` (best, human, sparse) in."""
        return TrainingFiles(self.evaluation_dir / f"{_file_name(name)}_s{seed_index}")

    # run.json

    def info(self) -> dict[str, Any]:
        """The contents of run.json, as recorded (see `status` for the live status)."""
        try:
            return read_record(self.path / layout.RUN_INFO)
        except FileNotFoundError:
            raise RunStoreError(
                f"{self.path} is not a rewardsmith run (no {layout.RUN_INFO})"
            ) from None

    def status(self) -> RunStatus:
        """The recorded status, except that `running` with its process gone is `interrupted`."""
        return _live_status(self.info())

    def set_status(self, status: RunStatus, **extra: Any) -> None:
        """Record a new status plus any extra fields (e.g. `error=`).

        Setting `running` makes this process the run's owner, as a resume does.
        """
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        changes = {**extra, "status": status}
        if status == "running":
            changes["process"] = current_process()
        self._update(lambda info: info.update(changes))

    def update_summary(self, **fields: Any) -> None:
        """Merge result fields into run.json's summary.

        Listings read `rounds_done`, `best_fitness`, `human_normalized_score` and `cost_usd`
        from here; others in use: `human_fitness`, `sparse_fitness`, `best_reward_path`, `tokens`.
        """
        self._update(lambda info: info.setdefault("summary", {}).update(fields))

    def _update(self, change: Callable[[dict[str, Any]], None]) -> None:
        with self._lock:
            info = self.info()
            change(info)
            info["updated_at"] = now_iso()
            write_record(self.path / layout.RUN_INFO, info)

    # files

    def round_dir(self, round: int) -> Path:
        """`round_RR/`, created on first use."""
        path = self.path / f"round_{_non_negative(round, 'round'):02d}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def candidate(self, key: CandidateKey) -> CandidateFiles:
        """The files of candidate `key` (`round_RR/cand_II/`, created on first use)."""
        files = CandidateFiles(self.path, key)
        files.path.mkdir(parents=True, exist_ok=True)
        return files

    def write_round_file(self, round: int, name: str, content: str | Mapping[str, Any]) -> Path:
        """Write a round-level file atomically: text as is, a mapping as a versioned JSON record."""
        return write_file(self.round_dir(round) / _file_name(name), content)

    # LLM reply cache

    def save_reply(self, key: str, reply: Mapping[str, Any]) -> Path:
        """Store a reply under `key` (e.g. `r01-design-s03-<prompt hash>`) before it is used."""
        self.llm_dir.mkdir(exist_ok=True)
        return write_file(self.llm_dir / f"{_file_name(key)}.json", reply)

    def load_reply(self, key: str) -> dict[str, Any] | None:
        """The reply saved under `key`, or None if that call was never answered."""
        try:
            return read_record(self.llm_dir / f"{_file_name(key)}.json")
        except FileNotFoundError:
            return None

    # index

    def _db(self) -> RunIndex:
        with self._lock:
            if self._index is None:
                self._index = RunIndex(self.index_path)
            return self._index

    def upsert_candidate(self, round: int, idx: int, **fields: Any) -> None:
        """Insert or update a candidate's row; only the given fields change."""
        self._db().upsert_candidate(round, idx, **fields)

    def candidates(self, round: int | None = None) -> list[dict[str, Any]]:
        """The index rows of one round's candidates, or of all, in (round, idx) order."""
        return self._db().candidates(round)

    def record_llm_call(
        self,
        round: int | None,
        purpose: str,
        call: Mapping[str, Any],
        response_path: Path | None = None,
    ) -> int:
        """Log an LLM call; `response_path` is stored relative to the run so the run can move."""
        stored = None
        if response_path is not None:
            path = Path(response_path)
            stored = str(path.relative_to(self.path) if path.is_relative_to(self.path) else path)
        return self._db().record_llm_call(round, purpose, call, stored)

    def record_node_time(self, round: int, attempt: int, node: str, wall_s: float) -> None:
        """Keep one graph node's wall time (`eureka_loop/timing.py`)."""
        self._db().record_node_time(round, attempt, node, wall_s)

    def node_times(self) -> list[dict[str, Any]]:
        """Every graph node's recorded wall time, in the order they ran."""
        return self._db().node_times()

    def llm_calls(self) -> list[dict[str, Any]]:
        """Every logged LLM call, oldest first, with its tokens, cost and timing."""
        return self._db().llm_calls()

    def totals(self) -> dict[str, Any]:
        """LLM spend so far: `tokens`, `cost_usd`, `calls`."""
        return self._db().totals()

    def close(self) -> None:
        """Close the index; a later query opens it again, so the run stays usable."""
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None


class RunStore:
    """The runs directory: creates, finds and lists runs."""

    def __init__(self, root: Path = Path("runs")) -> None:
        self.root = Path(root)

    def create_run(
        self, task_id: str, config: Mapping[str, Any], command: Sequence[str], seed: int | None
    ) -> Run:
        """Start a run owned by this process; `config["model"]` names the LLM, if any."""
        path = claim_fresh_dir(self.root, f"{datetime.now():%Y%m%d-%H%M%S}-{_slug(task_id)}")
        now = now_iso()
        info = {
            "run_id": path.name,
            "task": task_id,
            "model": config.get("model") or OFFLINE_DESIGNER,
            "command": list(command),
            "config": dict(config),
            "seed": seed,
            "packages": _package_versions(),
            "created_at": now,
            "updated_at": now,
            "status": "running",
            "process": current_process(),
            "summary": {},
        }
        run = Run(path)
        run._db()  # set up the index before run.json makes the run visible to other processes
        write_record(path / layout.RUN_INFO, info)
        return run

    def open_run(self, ref: str | Path) -> Run:
        """Open a run by path, by id, or by a unique prefix of its id.

        A `Path`, or a string with a path separator, is a path; anything else is looked up in root.
        """
        if isinstance(ref, Path) or os.sep in ref:
            path = Path(ref)
            if not path.is_dir():
                raise RunStoreError(f"{path} does not exist or is not a run directory")
        else:
            path = self._find(ref)
        run = Run(path)
        run.info()
        return run

    def _find(self, ref: str) -> Path:
        exact = self.root / ref
        if exact.is_dir():
            return exact
        matches = [p for p in self._run_dirs() if p.name.startswith(ref)]
        if not matches:
            raise RunStoreError(f"no run in {self.root} has an id starting with {ref!r}")
        if len(matches) > 1:
            names = ", ".join(p.name for p in matches)
            raise RunStoreError(
                f"{ref!r} matches {len(matches)} runs ({names}); give more of the id"
            )
        return matches[0]

    def _run_dirs(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def list_runs(self) -> list[RunSummary]:
        """Every run under root, oldest first.

        Directories without run.json are skipped (a run being created, or not a run); runs that
        cannot be read are skipped with a logged warning.
        """
        summaries = []
        for path in self._run_dirs():
            try:
                summaries.append(_summarize(path, read_record(path / layout.RUN_INFO)))
            except FileNotFoundError:
                continue
            except RunStoreError as e:
                logger.warning("skipping %s: %s", path, e)
        return sorted(summaries, key=lambda s: (s.created_at, s.run_id))


def _live_status(info: Mapping[str, Any]) -> RunStatus:
    status: RunStatus = info["status"]
    if status == "running" and not is_alive(info["process"]):
        return "interrupted"
    return status


def _summarize(path: Path, info: Mapping[str, Any]) -> RunSummary:
    summary = info.get("summary", {})
    return RunSummary(
        run_id=path.name,
        task=info["task"],
        model=info["model"],
        rounds_done=summary.get("rounds_done", 0),
        best_fitness=summary.get("best_fitness"),
        human_normalized_score=summary.get("human_normalized_score"),
        cost_usd=summary.get("cost_usd", 0.0),
        status=_live_status(info),
        created_at=info["created_at"],
        path=path,
    )


def _package_versions() -> dict[str, str]:
    """Versions of what shapes results, from package metadata (importing torch takes seconds)."""
    versions = {"rewardsmith": __version__, "python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _file_name(name: str) -> str:
    """Reject names that could leave the run directory or hide among temp files."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a plain file name (letters, digits, '.', '_', '-')")
    return name


def _non_negative(value: int, what: str) -> int:
    if value < 0:
        raise ValueError(f"{what} must be >= 0, not {value}")
    return value


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-") or "task"


def claim_fresh_dir(root: Path, prefix: str) -> Path:
    """Make a new directory `root/<prefix>-<random>`; mkdir fails if it exists, so processes
    starting in the same second never share one (and never overwrite each other's files)."""
    root.mkdir(parents=True, exist_ok=True)
    for _ in range(_ID_ATTEMPTS):
        path = root / f"{prefix}-{secrets.token_hex(2)}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        fsync_dir(root)
        return path
    raise RunStoreError(f"could not find a free directory name for {prefix} in {root}")
