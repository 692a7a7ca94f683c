"""A run directory read into one view model, for the commands and the report that look at runs.

Reading never writes: the index is opened read-only (the store's own `Run` would create or migrate
it), so a run can be inspected on a read-only disk, while it is still running, or after it was
copied from someone else. Anything missing, damaged or written by a newer rewardsmith raises
`RunStoreError` with a message that says so.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.runs import layout
from rewardsmith.runs.candidate import CandidateFiles, CandidateKey, CandidateStatus
from rewardsmith.runs.index import MIGRATIONS
from rewardsmith.runs.judgements import Judgement, RoundJudgements, judged_rounds
from rewardsmith.runs.loop_time import loop_time
from rewardsmith.runs.schema import RunStoreError, newer_version_error, read_record
from rewardsmith.runs.store import Run, RunStore

_CODE_BLOCK = re.compile(r"```[a-z]*\n.*?```", re.DOTALL)
_DESIGN_STAGE = {"extract_error": "design", "llm_error": "design"}


class UnknownCandidateError(RunStoreError):
    """A candidate reference that names none of the run's candidates (the run itself is fine)."""


@dataclass
class CandidateView:
    """One candidate: where it ended up, and where its files are."""

    round: int
    idx: int
    attempt: int
    status: str
    category: str | None
    message: str | None
    fitness: float | None
    success_rate: float | None
    parent: str | None
    path: Path
    is_round_best: bool = False
    is_best: bool = False
    steps: int | None = None  # training steps it got
    stopped_at_rung: int | None = None  # halving schedule: the rung (from 0) it stopped after

    @property
    def key(self) -> str:
        """`r01c02`, as listings show it and `--candidate` takes it."""
        return CandidateKey(self.round, self.idx).label

    @property
    def files(self) -> CandidateFiles:
        """The candidate's folder; each read goes to disk, the view caches no file."""
        return CandidateFiles(self.path.parent.parent, CandidateKey(self.round, self.idx))

    @property
    def stage(self) -> str | None:
        """Which step stopped it: design (no usable code), critic, preference check, training."""
        if self.status == CandidateStatus.FAILED:
            return "training"
        if self.status != CandidateStatus.REJECTED:
            return None
        if self.category == "preference_rejected":
            return "preference check"
        return _DESIGN_STAGE.get(self.category or "", "critic")

    @property
    def fate(self) -> str:
        """A short phrase for listings: what happened to it, and why."""
        reason = f"{self.category}: {self.message}" if self.category else (self.message or "")
        if self.status == CandidateStatus.TRAINED and self.stopped_at_rung is not None:
            return f"trained; stopped early at rung {self.stopped_at_rung + 1}"
        if self.status == CandidateStatus.TRAINED:
            return "trained"
        if self.status == CandidateStatus.REJECTED:
            return {
                "design": f"no usable code ({reason})",
                "preference check": f"rejected by the preference check ({reason})",
            }.get(self.stage or "", f"rejected by the critic ({reason})")
        if self.status == CandidateStatus.FAILED:
            return f"training failed ({reason})"
        return "designed; not checked yet"

    def code(self) -> str | None:
        """The reward code, or None when none was extracted from the reply."""
        return self.files.text(layout.REWARD)

    def response(self) -> str | None:
        """The designer's raw reply."""
        return self.files.text(layout.RESPONSE)

    def prompt(self) -> dict[str, Any] | None:
        """`{"messages": [...], "prompt_hash": ...}` exactly as sent."""
        return self.files.record(layout.PROMPT)

    def critique(self) -> dict[str, Any] | None:
        """The critic's verdict, or None before the critic saw code (or when none was extracted)."""
        return self.files.critique()

    def outcome(self) -> dict[str, Any] | None:
        """The training outcome: fitness, evaluation and the checkpoints over training."""
        return self.files.outcome()

    def checkpoints(self) -> list[dict[str, Any]]:
        """The reflection log over training (fitness and reward components at each checkpoint);
        [] for a candidate that was not trained."""
        return list((self.outcome() or {}).get("checkpoints", []))

    def analysis(self) -> dict[str, Any]:
        """The analyzer's record (statistics, advice, reward-hacking flag); empty if untrained."""
        return self.files.analysis() or {}

    def hacking_reasons(self) -> list[str]:
        """Why the analyzer suspects reward hacking (return rising while fitness does not)."""
        hacking = self.files.hacking()
        return list(hacking.get("reasons", [])) if hacking.get("suspect") else []

    def judge_verdict(self) -> str | None:
        """The video judge's verdict in one line (model text: show it as untrusted), or None."""
        return verdict_text(self.files.judge())


def verdict_text(record: dict[str, Any] | None) -> str | None:
    """A `judge.json` record as one line: the hack and when it starts, or whether the behaviour
    follows the goal, then the judge's own words; None where nothing was judged."""
    if not record:
        return None
    if record.get("error"):
        return f"video judge: no verdict ({record['error']})"
    hack, second = record.get("hack"), record.get("from_second")
    if hack:
        head = f"video judge: {hack}" + (
            f" from {second:.1f} s" if isinstance(second, int | float) else ""
        )
    else:
        follows = record.get("follows_goal")
        head = "video judge: " + ("follows the goal" if follows else "does not follow the goal")
    explanation = record.get("explanation")
    return f"{head}: {explanation}" if explanation else head


@dataclass
class Reflection:
    """The feedback a round fed forward: statistics, advice and code of the best so far."""

    key: str
    fitness: float | None
    text: str
    """reflection.md as the prompt carried it, best code included."""

    def without_code(self) -> str:
        """The text with the code block replaced by a note (the code is shown elsewhere)."""
        return _CODE_BLOCK.sub(f"[the code of {self.key}]", self.text).strip()


@dataclass
class RoundView:
    """One attempt at a round (a round where nothing trained is retried as attempt 1, 2...)."""

    round: int
    attempt: int
    candidates: list[CandidateView]
    summary: dict[str, Any] | None
    prompt_hash: str | None
    tokens: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0
    reflection: Reflection | None = None

    @property
    def label(self) -> str:
        """`round 2`, or `round 2 (retry 1)` for a retry of it."""
        return f"round {self.round}" + (f" (retry {self.attempt})" if self.attempt else "")

    @property
    def finished(self) -> bool:
        """Whether selection ran, so the round's best is known."""
        return self.summary is not None

    @property
    def best_fitness(self) -> float | None:
        """Best fitness so far, after this round."""
        return (self.summary or {}).get("best_fitness")

    @property
    def round_best_fitness(self) -> float | None:
        """The best fitness among this attempt's own candidates, unlike `best_fitness`."""
        return (self.summary or {}).get("round_best_fitness")


@dataclass
class RunView:
    """Everything the viewing commands show about one run."""

    path: Path
    info: dict[str, Any]
    status: str
    rounds: list[RoundView]
    evaluation: dict[str, Any] | None
    tokens: int
    cost_usd: float
    llm_calls: int
    candidates: list[CandidateView] = field(default_factory=list)
    finals: dict[str, Any] | None = None  # finals.json: the finalists' seeds and the winner
    loop_time: dict[str, Any] | None = None  # seconds per round: training, the rest (timing.py)
    videos: list[tuple[str, Path]] = field(default_factory=list)  # (what it shows, the MP4)

    def finals_text(self) -> str | None:
        """One line on the finals (`eureka_loop/finals.py`); None where the run played none."""
        return finals_line(self.finals) if isinstance(self.finals, dict) else None

    @property
    def run_id(self) -> str:
        """The run folder's name, which every command accepts as RUN."""
        return self.path.name

    @property
    def task(self) -> str:
        """The task id run.json records ("?" if it records none)."""
        return str(self.info.get("task", "?"))

    @property
    def designer(self) -> str:
        """The LLM the run designed with, or the offline designer's name (run.json's `model`)."""
        return str(self.info.get("model", "?"))

    @property
    def config(self) -> dict[str, Any]:
        """The loop config the run started with, as recorded; a copy, so editing it is safe."""
        return dict(self.info.get("config") or {})

    @property
    def summary(self) -> dict[str, Any]:
        """Run.json's results so far (see `Run.update_summary`); a copy, {} before any."""
        return dict(self.info.get("summary") or {})

    @property
    def stop_reason(self) -> str | None:
        """Why the loop stopped (rounds done, a budget); None while it runs, and for a run that
        crashed or was interrupted."""
        return self.info.get("stop_reason")

    @property
    def best(self) -> CandidateView | None:
        """The run's best so far, as the summary names it (else the last round's); None before
        any candidate trained."""
        return next((c for c in self.candidates if c.is_best), None)

    @property
    def human_fitness(self) -> float | None:
        """The human reward's fitness in the final evaluation (from evaluation.json, else the
        summary); None before the evaluation."""
        return self._final("human")

    @property
    def sparse_fitness(self) -> float | None:
        """The sparse reward's fitness in the final evaluation, read as `human_fitness` is."""
        return self._final("sparse")

    @property
    def human_normalized_score(self) -> float | None:
        """The best reward's score on the human-normalized scale (`evaluation.human_normalized`);
        None before the final evaluation or where it has no scale."""
        if self.evaluation is not None:
            return self.evaluation.get("human_normalized_score")
        return self.summary.get("human_normalized_score")

    def _final(self, name: str) -> float | None:
        if self.evaluation is not None:
            return (self.evaluation.get(name) or {}).get("fitness")
        return self.summary.get(f"{name}_fitness")

    def candidate(self, ref: str, round: int | None = None) -> CandidateView:
        """A candidate by key (`r01c02`), or by index within `round`."""
        try:
            parsed: CandidateKey | None = CandidateKey.parse(ref)
        except ValueError:
            parsed = None
        if parsed is not None:
            wanted = parsed
        elif ref.isdigit() and round is not None:
            wanted = CandidateKey(round, int(ref))
        else:
            raise UnknownCandidateError(
                f"{ref!r} is not a candidate: give a key like r01c02, or --round with an index"
            )
        for c in self.candidates:
            if (c.round, c.idx) == (wanted.round, wanted.idx):
                return c
        known = ", ".join(c.key for c in self.candidates) or "none"
        raise UnknownCandidateError(
            f"run {self.run_id} has no candidate {wanted.label} (it has: {known})"
        )

    def parent_of(self, candidate: CandidateView) -> CandidateView | None:
        """The candidate this one evolved from: the best so far when it was designed."""
        if not candidate.parent:
            return None
        try:
            return self.candidate(candidate.parent)
        except RunStoreError:
            return None


def finals_line(finals: dict[str, Any]) -> str:
    """A `finals.json` record in one line: each finalist's mean and spread over its finals
    seeds, and which won (the run prints it when the finals end, `show` and the report too)."""
    parts = [
        f"{f['key']} {f['mean']:.4g} +- {f['std']:.2g} over {f['seeds']} seeds"
        for f in finals.get("finalists", [])
        if isinstance(f, dict)
        and isinstance(f.get("mean"), int | float)
        and isinstance(f.get("std"), int | float)
    ]
    text = f"finals: {'; '.join(parts)}; won by {finals.get('winner')}"
    if finals.get("changed"):
        text += f", replacing the search's best {finals.get('search_best')}"
    return text


def open_view(ref: str | Path, runs_dir: Path) -> RunView:
    """Find a run by path, id or unique id prefix under `runs_dir`, and read it."""
    run = RunStore(runs_dir).open_run(ref)
    return load_view(run)


def load_view(run: Run) -> RunView:
    """Read a run directory into a `RunView`, without writing anything to it."""
    info = run.info()
    candidate_rows, calls, node_times = _read_index(run.index_path)
    samples = max(1, int((info.get("config") or {}).get("samples") or 1))
    summaries = _round_records(run.path, layout.ROUND_SUMMARY)
    prompts = _round_records(run.path, layout.ROUND_PROMPT)
    best_key = _best_key(info, summaries)
    candidates = [
        CandidateView(
            round=row["round"],
            idx=row["idx"],
            attempt=row["idx"] // samples,
            status=row["status"] or CandidateStatus.DESIGNED.value,
            category=row["category"],
            message=row["message"],
            fitness=row["fitness"],
            success_rate=row["success_rate"],
            parent=row["parent"],
            path=CandidateFiles(run.path, CandidateKey.of(row)).path,
            is_best=CandidateKey.of(row).label == best_key,
            steps=row.get("steps"),  # None in an index from before halving
            stopped_at_rung=row.get("rung"),
        )
        for row in map(dict, candidate_rows)
    ]
    attempts = sorted({(c.round, c.attempt) for c in candidates} | set(summaries) | set(prompts))
    rounds = []
    for round_, attempt in attempts:
        summary = summaries.get((round_, attempt))
        members = [c for c in candidates if (c.round, c.attempt) == (round_, attempt)]
        round_best = (summary or {}).get("round_best")
        for c in members:
            c.is_round_best = c.key == round_best
        view = RoundView(
            round=round_,
            attempt=attempt,
            candidates=members,
            summary=summary,
            prompt_hash=(prompts.get((round_, attempt)) or {}).get("prompt_hash"),
            reflection=_reflection(run.path, (summary or {}).get("best"), candidates),
        )
        _add_spend(view, calls, samples)
        rounds.append(view)
    evaluation = None
    eval_path = run.evaluation_file
    if eval_path.is_file():
        evaluation = read_record(eval_path)
    finals = read_record(run.finals_file) if run.finals_file.is_file() else None
    run_view = RunView(
        path=run.path,
        info=info,
        status=run.status(),
        rounds=rounds,
        evaluation=evaluation,
        finals=finals,
        loop_time=loop_time(node_times),
        tokens=sum((c["prompt_tokens"] or 0) + (c["completion_tokens"] or 0) for c in calls),
        cost_usd=sum(c["cost_usd"] or 0.0 for c in calls),
        llm_calls=len(calls),
        candidates=candidates,
    )
    run_view.videos = _videos(run, candidates)
    return run_view


def sparkline(values: Iterable[float | None]) -> str:
    """Values as a line of block characters (a gap for a missing value), for terminal output."""
    blocks = "▁▂▃▄▅▆▇█"
    items = list(values)
    present = [v for v in items if v is not None]
    if not present:
        return ""
    low, high = min(present), max(present)
    span = high - low
    return "".join(
        " "
        if v is None
        else blocks[0 if span == 0 else round((v - low) / span * (len(blocks) - 1))]
        for v in items
    )


def _read_index(
    path: Path,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Candidates, LLM calls and node times (none in an index from before them) from the
    index, opened read-only."""
    if not path.is_file():
        raise RunStoreError(
            f"{path.parent} has run.json but no {path.name}: the run directory is incomplete "
            "(copied in part, or damaged)"
        )
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise RunStoreError(f"cannot open {path}: {e}") from e
    try:
        conn.row_factory = sqlite3.Row
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise newer_version_error(path, version, len(MIGRATIONS))
        if version < 1:
            raise RunStoreError(f"{path} holds no run index; the run directory is damaged")
        candidates = conn.execute("SELECT * FROM candidates ORDER BY round, idx").fetchall()
        calls = conn.execute("SELECT * FROM llm_calls ORDER BY id").fetchall()
        times = (
            conn.execute("SELECT * FROM node_times ORDER BY id").fetchall() if version > 2 else []
        )
    except sqlite3.DatabaseError as e:
        raise RunStoreError(f"{path} cannot be read ({e}); the index is damaged") from e
    finally:
        conn.close()
    return [dict(r) for r in candidates], [dict(r) for r in calls], [dict(r) for r in times]


def _round_records(run_dir: Path, stem: str) -> dict[tuple[int, int], dict[str, Any]]:
    """The run's round files `stem` (`layout.ROUND_SUMMARY`, ...) by (round, attempt)."""
    return {at: read_record(path) for at, path in layout.round_files(run_dir, stem).items()}


def _best_key(info: dict[str, Any], summaries: dict[tuple[int, int], dict[str, Any]]) -> str | None:
    recorded = (info.get("summary") or {}).get("best_candidate")
    if recorded:
        return str(recorded)
    if summaries:
        return summaries[max(summaries)].get("best")
    return None


def _reflection(
    run_dir: Path, key: str | None, candidates: list[CandidateView]
) -> Reflection | None:
    """The reflection of the best candidate so far, which the next round's prompt carries."""
    try:
        parsed = CandidateKey.parse(key or "")
    except ValueError:
        return None
    text = CandidateFiles(run_dir, parsed).text(layout.REFLECTION)
    if text is None:
        return None
    fitness = next((c.fitness for c in candidates if c.key == key), None)
    return Reflection(key=str(key), fitness=fitness, text=text)


def _add_spend(view: RoundView, calls: list[dict[str, Any]], samples: int) -> None:
    """Attribute LLM calls to the attempt of the candidate their reply file names."""
    for call in calls:
        if call["round"] != view.round:
            continue
        named = CandidateKey.find(Path(call.get("response_path") or "").name)
        attempt = named.idx // samples if named else 0
        if attempt != view.attempt:
            continue
        view.tokens += (call["prompt_tokens"] or 0) + (call["completion_tokens"] or 0)
        view.cost_usd += call["cost_usd"] or 0.0
        view.llm_calls += 1


FINAL_ARMS = ("best", "human", "sparse")


def _videos(run: Run, candidates: list[CandidateView]) -> list[tuple[str, Path]]:
    """The run's rollout videos: the final evaluation's arms (first seed) first, then the filmed
    candidates in order."""
    found = []
    for name in FINAL_ARMS:
        video = run.evaluation_arm(name, 0).video()
        if video is not None:
            found.append((f"final evaluation: the {name} reward", video))
    for c in candidates:
        video = c.files.video()
        if video is not None:
            role = (
                ", the run's best" if c.is_best else ", its round's best" if c.is_round_best else ""
            )
            found.append(
                (
                    f"{c.key}{role} (fitness {c.fitness:.4g})"
                    if c.fitness is not None
                    else c.key + role,
                    video,
                )
            )
    return found


def human_judgements(run_path: Path) -> dict[int, list[Judgement]]:
    """The choices a person made between each judged round's videos (`rewardsmith judge`), by
    round; a round nobody judged is absent."""
    return {r: RoundJudgements(run_path, r).judgements() for r in judged_rounds(run_path)}
