"""One candidate of a run: its key and its folder `round_RR/cand_II/`, and how each file in it
is written and read (the names are `rewardsmith.runs.layout`'s).

JSON files are versioned records (`write_record`); reading one checks its version.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from rewardsmith.runs.layout import (
    ANALYSIS,
    CONFIRM_DIR,
    CRITIQUE,
    EVAL_DIR,
    FINALS_DIR,
    JOB_DIR,
    JUDGE,
    KEYFRAMES,
    OUTCOME,
    PREFERENCE,
    REWARD,
    VIDEO,
    VIDEO_NOTE,
    rung_file,
    rung_state_dir,
)
from rewardsmith.runs.schema import read_record, write_file


class CandidateStatus(StrEnum):
    """Where a candidate stands. Stored as its plain value (in the index and the graph state),
    so a run reads the same whatever code wrote it."""

    DESIGNED = "designed"  # written, not checked yet
    REJECTED = "rejected"  # stopped before training: no code, the critic, the preference check
    TRAINED = "trained"
    FAILED = "failed"  # its training failed


_LABEL = re.compile(r"r(\d+)c(\d+)")
_ROUND_DIR = re.compile(r"round_(\d+)")
_CAND_DIR = re.compile(r"cand_(\d+)")


@dataclass(frozen=True, order=True)
class CandidateKey:
    """A candidate's identity: its round and its index in that round (attempts included)."""

    round: int
    idx: int

    def __post_init__(self) -> None:
        if self.round < 0 or self.idx < 0:
            raise ValueError(
                f"a candidate's round and index are >= 0, not {self.round}, {self.idx}"
            )

    @property
    def label(self) -> str:
        """`r01c02`: how listings, prompts and the index name the candidate."""
        return f"r{self.round:02d}c{self.idx:02d}"

    @property
    def round_dir_name(self) -> str:
        """`round_01`, the round's folder in the run (the name `Run.round_dir` makes too)."""
        return f"round_{self.round:02d}"

    @property
    def dir_name(self) -> str:
        """`cand_02`, the candidate's folder inside its round's; `of_dir` parses it back."""
        return f"cand_{self.idx:02d}"

    def __str__(self) -> str:
        return self.label

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> CandidateKey:
        """The key of a summary or index row: those stay plain dicts (the graph state, sqlite)."""
        return cls(record["round"], record["idx"])

    @classmethod
    def parse(cls, label: str) -> CandidateKey:
        """The key a label such as `r01c02` names; ValueError for anything else."""
        match = _LABEL.fullmatch(label.strip())
        if not match:
            raise ValueError(f"{label!r} is not a candidate key (like r01c02)")
        return cls(int(match[1]), int(match[2]))

    @classmethod
    def find(cls, text: str) -> CandidateKey | None:
        """The first key named anywhere in `text` (a reply file name, say), or None."""
        match = _LABEL.search(text)
        return cls(int(match[1]), int(match[2])) if match else None

    @classmethod
    def of_dir(cls, path: Path) -> CandidateKey | None:
        """The key of a `round_RR/cand_II` folder, or None for any other folder."""
        round_match = _ROUND_DIR.fullmatch(path.parent.name)
        cand_match = _CAND_DIR.fullmatch(path.name)
        if not (round_match and cand_match):
            return None
        return cls(int(round_match[1]), int(cand_match[1]))


class TrainingFiles:
    """A folder one reward trains in: a candidate's, or an arm of the final evaluation.

    Reading never creates anything; writing is atomic, and JSON is written as versioned records.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path})"

    def text(self, name: str) -> str | None:
        """A text file's contents, or None if it is absent."""
        try:
            return (self.path / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def record(self, name: str) -> dict[str, Any] | None:
        """A JSON record, version checked, or None if it is absent."""
        try:
            return read_record(self.path / name)
        except FileNotFoundError:
            return None

    def write(self, name: str, content: str | Mapping[str, Any]) -> Path:
        """Write text as is, a mapping as a versioned record; atomically."""
        self.path.mkdir(parents=True, exist_ok=True)
        return write_file(self.path / name, content)

    @property
    def job_dir(self) -> Path:
        """The training worker's folder."""
        return self.path / JOB_DIR

    @property
    def eval_dir(self) -> Path:
        """The reward-free evaluator's folder."""
        return self.path / EVAL_DIR

    def outcome(self) -> dict[str, Any] | None:
        """The training outcome, once training is over."""
        return self.record(OUTCOME)

    def write_outcome(self, outcome: Mapping[str, Any]) -> Path:
        """Write the finished outcome; a resume reuses it rather than train the reward again."""
        return self.write(OUTCOME, outcome)

    def rung_outcome(self, index: int) -> dict[str, Any] | None:
        """The outcome of halving rung `index`, once it is trained."""
        return self.record(rung_file(index))

    def write_rung_outcome(self, index: int, outcome: Mapping[str, Any]) -> Path:
        """Write rung `index`'s outcome: the next rung continues from its steps, and a resume
        skips the rung."""
        return self.write(rung_file(index), outcome)

    @property
    def video_path(self) -> Path:
        """Where the rollout video is kept (a checked copy of what the video program wrote)."""
        return self.path / VIDEO

    def video(self) -> Path | None:
        """The rollout video, or None where none was filmed."""
        return self.video_path if self.video_path.is_file() else None

    def video_note(self) -> dict[str, Any] | None:
        """The filming's record (`frames`, `reason` where there is no video), None if never tried."""
        return self.record(VIDEO_NOTE)

    def write_video_note(self, note: Mapping[str, Any]) -> Path:
        """Keep how the filming went, so a resume does not film again."""
        return self.write(VIDEO_NOTE, note)

    @property
    def keyframes_path(self) -> Path:
        """Where the video's stills are kept (a checked copy of what the video program kept)."""
        return self.path / KEYFRAMES

    def keyframes(self) -> dict[str, Any] | None:
        """The stills, `frames` (uint8 [K, H, W, 3]) and `seconds` ([K]), or None where none
        were kept. The file is the trusted side's own, written after its arrays were checked."""
        import numpy as np

        try:
            with np.load(self.keyframes_path, allow_pickle=False) as arrays:
                return {"frames": arrays["frames"], "seconds": arrays["seconds"]}
        except FileNotFoundError:
            return None

    def rung_state_dir(self, index: int) -> Path:
        """What halving rung `index` left for the next rung to continue from."""
        return self.path / rung_state_dir(index)


class CandidateFiles(TrainingFiles):
    """The files of one candidate folder, `round_RR/cand_II/` of the run at `run_path`."""

    def __init__(self, run_path: Path, key: CandidateKey) -> None:
        super().__init__(Path(run_path) / key.round_dir_name / key.dir_name)
        self.key = key

    def reward_code(self) -> str:
        """The candidate's reward code; a candidate without one never gets this far."""
        code = self.text(REWARD)
        if code is None:
            raise FileNotFoundError(f"{self.path / REWARD} is missing")
        return code

    def analysis(self) -> dict[str, Any] | None:
        """The analyzer's facts about the trained policy, or None before analysis."""
        return self.record(ANALYSIS)

    def preference(self) -> dict[str, Any] | None:
        """The preference check's bank scores and verdict, or None where it did not run."""
        return self.record(PREFERENCE)

    def critique(self) -> dict[str, Any] | None:
        """The critic's verdict on the code, or None before the critic saw it."""
        return self.record(CRITIQUE)

    def judge(self) -> dict[str, Any] | None:
        """The video judge's verdict (`follows_goal`, `hack`, `from_second`, `explanation`, or
        `error`), or None where it did not judge this candidate."""
        return self.record(JUDGE)

    def write_judge(self, verdict: Mapping[str, Any]) -> Path:
        """Keep the video judge's verdict, so a resume does not ask again."""
        return self.write(JUDGE, verdict)

    def hacking(self) -> dict[str, Any]:
        """The analyzer's reward-hacking flag, or {} before analysis."""
        return dict((self.analysis() or {}).get("hacking") or {})

    def confirmation(self) -> TrainingFiles:
        """The second-seed training (`--confirm-best`) of a would-be new best, `confirm/`."""
        return TrainingFiles(self.path / CONFIRM_DIR)

    def finals(self, seed_index: int) -> TrainingFiles:
        """A finalist's `seed_index`-th extra training seed (`--finalists`), `finals/sJ/`."""
        return TrainingFiles(self.path / FINALS_DIR / f"s{seed_index}")


def candidates_on_disk(run_path: Path) -> Iterator[CandidateFiles]:
    """Every candidate folder of a run, in key order."""
    keys = sorted(
        key
        for path in Path(run_path).glob("round_*/cand_*")
        if path.is_dir() and (key := CandidateKey.of_dir(path)) is not None
    )
    for key in keys:
        yield CandidateFiles(run_path, key)
