"""The schema of every record the orchestrator reads back from a sandboxed program, and its cap.

A record is checked field by field before anything uses it: integers are integers (not `true`, not
`"many"`), numbers finite, strings valid text clipped to a length, lists and name->value maps of a
bounded size, and only the known fields are kept. A record that fails is a `WorkerFileError`
naming the file and the field; the caller turns it into a `bad_worker_output` error.
The smoke test's and the scorer's records are checked in their own modules, with these helpers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rewardsmith import job_spec as files
from rewardsmith.reward.check import MAX_COMPONENT_NAME, MAX_COMPONENTS
from rewardsmith.reward.errors import RewardError
from rewardsmith.sandbox.worker_files import (
    MissingWorkerFile,
    WorkerFileError,
    read_bytes,
    read_json_lines,
    read_npz,
    read_record,
)

KB, MB = 1024, 1024 * 1024
RESULT_CAP = 1 * MB
PROGRESS_CAP = 4 * KB
METRICS_CAP = 4 * MB
EVALUATION_CAP = 1 * MB
TRAJECTORIES_CAP = 64 * MB
TRAJECTORIES_EXPANDED_CAP = 128 * MB
TRAINING_STATE_CAP = 256 * MB  # per file; a humanoid policy with its optimiser is ~1 MB
MAX_CHECKPOINTS = 1000
MAX_EPISODES = 10_000
MAX_NAME = MAX_COMPONENT_NAME  # component names, and other short names in a record
MAX_STEPS = 10**12


class BadRecord(ValueError):
    """A record broke its schema; the message names the field."""


# --- field checks ------------------------------------------------------------------------------


def show(value: Any) -> str:
    """A short, printable view of a bad value for an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def clean_text(value: str, cap: int) -> str:
    """`value` clipped to `cap` characters, with lone surrogates (valid JSON, not encodable)
    replaced so that the text can always be stored and printed."""
    text = value.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= cap else text[: cap - 1] + "…"


def obj(value: Any, where: str) -> dict[str, Any]:
    """`value` if it is a JSON object; `where` names it in the error."""
    if not isinstance(value, dict):
        raise BadRecord(f"{where} is {show(value)}, not a JSON object")
    return value


def integer(record: dict[str, Any], key: str, low: int = 0, high: int = MAX_STEPS) -> int:
    """`record[key]`, an integer from `low` to `high`; JSON `true` is not one."""
    value = _get(record, key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRecord(f"{key} is {show(value)}, not an integer from {low} to {high}")
    return value


def number(
    record: dict[str, Any],
    key: str,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    optional: bool = False,
) -> float | None:
    """`record[key]`, a finite number from `low` to `high`; `optional` lets null through as None."""
    value = _get(record, key)
    if value is None and optional:
        return None
    if not _finite(value, low, high):
        raise BadRecord(f"{key} is {show(value)}, not a finite number from {low} to {high}")
    return value


def numbers(record: dict[str, Any], key: str, length: int | None = None) -> list[float]:
    """`record[key]`, at most MAX_EPISODES finite numbers (exactly `length` where given)."""
    return _numbers(_get(record, key), key, length)


def text(record: dict[str, Any], key: str, cap: int) -> str:
    """`record[key]`, text, cleaned and clipped to `cap` characters."""
    value = _get(record, key)
    if not isinstance(value, str):
        raise BadRecord(f"{key} is {show(value)}, not text")
    return clean_text(value, cap)


def texts(record: dict[str, Any], key: str, count: int, cap: int) -> list[str]:
    """`record[key]`, a list of at most `count` texts, each cleaned and clipped to `cap`."""
    value = _get(record, key)
    if not isinstance(value, list) or len(value) > count:
        raise BadRecord(f"{key} is {show(value)}, not a list of at most {count} texts")
    if not all(isinstance(item, str) for item in value):
        raise BadRecord(f"{key} holds something other than text")
    return [clean_text(item, cap) for item in value]


def named(record: dict[str, Any], key: str, check: Callable[[Any, str], Any]) -> dict[str, Any]:
    """A map from at most MAX_COMPONENTS short names to values that pass `check`."""
    value = _get(record, key)
    if not isinstance(value, dict) or len(value) > MAX_COMPONENTS:
        raise BadRecord(f"{key} is {show(value)}, not a map of at most {MAX_COMPONENTS} names")
    out = {}
    for name, item in value.items():
        if len(name) > MAX_NAME:
            raise BadRecord(f"{key} has a name longer than {MAX_NAME} characters")
        out[clean_text(name, MAX_NAME)] = check(item, f"{key}[{show(name)}]")
    return out


def finite(value: Any, where: str) -> float:
    """A check for `named`: `value` if it is a finite number (not a bool)."""
    if not _finite(value):
        raise BadRecord(f"{where} is {show(value)}, not a finite number")
    return value


def finite_list(length: int | None) -> Callable[[Any, str], list[float]]:
    """A check for `named`: a list of finite numbers, exactly `length` of them where given."""
    return lambda value, where: _numbers(value, where, length)


def _get(record: dict[str, Any], key: str) -> Any:
    if key not in record:
        raise BadRecord(f"{key} is missing")
    return record[key]


def _finite(value: Any, low: float = -math.inf, high: float = math.inf) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and low <= value <= high


def _numbers(value: Any, where: str, length: int | None) -> list[float]:
    if not isinstance(value, list) or len(value) > MAX_EPISODES:
        raise BadRecord(f"{where} is {show(value)}, not a list of at most {MAX_EPISODES} numbers")
    if length is not None and len(value) != length:
        raise BadRecord(f"{where} has {len(value)} values, not {length}")
    if not all(_finite(item) for item in value):
        raise BadRecord(f"{where} holds something other than finite numbers")
    return value


# --- the training job's records ----------------------------------------------------------------


@dataclass
class WorkerResult:
    """The worker's `result.json`: steps trained, or the error that stopped the reward."""

    steps: int = 0
    error: RewardError | None = None
    reward_confinement: list[str] = field(default_factory=list)
    """What confined the reward process beyond the sandbox (see `reward_process`)."""


def check_result(record: Any) -> WorkerResult:
    """`ok` with the steps trained, or the reward's error; a malformed error is a `BadRecord`."""
    record = obj(record, "the result")
    status = record.get("status")
    if status == "ok":
        confinement = (
            texts(record, "reward_confinement", 16, MAX_NAME)
            if "reward_confinement" in record
            else []
        )
        return WorkerResult(steps=integer(record, "steps"), reward_confinement=confinement)
    if status == "error":
        try:
            return WorkerResult(error=RewardError.from_dict(record))
        except RewardError as bad:
            raise BadRecord(bad.message) from None
    raise BadRecord(f"status is {show(status)}, not 'ok' or 'error'")


def check_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The fields of `rollout.summarize`: the evaluation, and part of every checkpoint."""
    return {
        "fitness": number(record, "fitness"),
        "fitness_std": number(record, "fitness_std", 0.0),
        "fitness_per_episode": numbers(record, "fitness_per_episode"),
        "success_rate": number(record, "success_rate", 0.0, 1.0, optional=True),
        "episode_length": number(record, "episode_length", 0.0),
        "terminated_rate": number(record, "terminated_rate", 0.0, 1.0),
    }


def check_checkpoint(record: Any) -> dict[str, Any]:
    """One line of `metrics.jsonl`: the step, the summary, the reward's return and components."""
    record = obj(record, "a checkpoint")
    return {
        "step": integer(record, "step"),
        **check_summary(record),
        "reward_return": number(record, "reward_return"),
        "components": named(record, "components", finite),
    }


def check_trajectories(arrays: dict[str, np.ndarray]) -> None:
    """The arrays of `trajectories.save_episodes`, with lengths that agree (see its layout)."""
    for key, array in arrays.items():
        if array.dtype.kind not in "biuf":
            raise BadRecord(f"{key} has dtype {array.dtype}, not numbers")
    offsets = _get(arrays, "offsets")
    if (
        offsets.ndim != 1
        or not 2 <= len(offsets) <= MAX_EPISODES + 1
        or offsets.dtype.kind not in "iu"
    ):
        raise BadRecord(f"offsets has shape {offsets.shape}, not 2 to {MAX_EPISODES + 1} integers")
    if offsets[0] != 0 or np.any(np.diff(offsets) < 1):
        raise BadRecord("offsets do not start at 0 and rise with every episode")
    episodes, steps = len(offsets) - 1, int(offsets[-1])
    expected = {"actions": steps, "env_rewards": steps}
    expected.update(dict.fromkeys(("terminated", "truncated", "fitness", "success"), episodes))
    states = [key for key in arrays if key.startswith("state/")]
    if not states:
        raise BadRecord("no state fields")
    expected.update(dict.fromkeys(states, steps + episodes))
    for key, rows in expected.items():
        array = _get(arrays, key)
        if array.ndim < 1 or len(array) != rows:
            raise BadRecord(f"{key} has shape {array.shape}, not {rows} rows")
    if not np.all(np.isfinite(arrays["fitness"])):
        raise BadRecord("fitness holds a value that is not finite")
    if not np.all(np.isin(arrays["success"], (-1, 0, 1))):
        raise BadRecord("success holds a value other than -1, 0 or 1")


# --- reading them ------------------------------------------------------------------------------


def checked(name: str, check: Callable[[Any], Any], record: Any) -> Any:
    """`check(record)`, its `BadRecord` turned into the `WorkerFileError` naming the file."""
    try:
        return check(record)
    except BadRecord as bad:
        raise WorkerFileError(name, str(bad)) from None


def read_result(job_dir: Path) -> WorkerResult:
    """The worker's checked `result.json`; a missing or bad one raises `WorkerFileError`."""
    record = read_record(job_dir, files.RESULT_FILE, RESULT_CAP)
    return checked(files.RESULT_FILE, check_result, record)


def read_progress(job_dir: Path) -> int | None:
    """Steps trained so far, or None while there is no readable progress record; never blocks."""
    try:
        record = read_record(job_dir, files.PROGRESS_FILE, PROGRESS_CAP)
        return integer(obj(record, "progress"), "steps")
    except (WorkerFileError, BadRecord):
        return None


def read_checkpoints(job_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The checkpoints in `metrics.jsonl` and a warning if a cut-off tail was dropped."""
    name = files.METRICS_FILE
    values, note = read_json_lines(job_dir, name, METRICS_CAP)
    if len(values) > MAX_CHECKPOINTS:
        raise WorkerFileError(name, f"holds {len(values)} checkpoints, over {MAX_CHECKPOINTS}")
    checkpoints = []
    for number_, value in enumerate(values, start=1):
        try:
            checkpoints.append(check_checkpoint(value))
        except BadRecord as bad:
            raise WorkerFileError(name, f"checkpoint {number_}: {bad}") from None
    return checkpoints, [note] if note else []


def read_evaluation(eval_dir: Path) -> dict[str, Any]:
    """The evaluator's checked `evaluation.json`: the summary whose fitness selects candidates."""
    record = read_record(eval_dir, files.EVAL_FILE, EVALUATION_CAP)
    return checked(files.EVAL_FILE, lambda r: check_summary(obj(r, "the evaluation")), record)


def read_trajectories(directory: Path, name: str = files.TRAJECTORIES_FILE) -> list[Any]:
    """The episodes of a `trajectories.npz` a sandboxed program wrote, checked before use."""
    from rewardsmith.rl.trajectories import episodes_from_arrays

    arrays = read_npz(directory, name, TRAJECTORIES_CAP, TRAJECTORIES_EXPANDED_CAP)
    checked(name, check_trajectories, arrays)
    return episodes_from_arrays(arrays)


def read_training_state(job_dir: Path) -> dict[str, bytes]:
    """The files a continued job starts from (`files.TRAINING_STATE_FILES`), as `resume_*`
    inputs; a file the learner does not write (no normalisation) is simply absent."""
    state = {}
    for name in files.TRAINING_STATE_FILES:
        try:
            state[f"{files.RESUME_PREFIX}{name}"] = read_bytes(job_dir, name, TRAINING_STATE_CAP)
        except MissingWorkerFile:
            continue
    if f"{files.RESUME_PREFIX}{files.POLICY_FILE}" not in state:
        raise MissingWorkerFile(files.POLICY_FILE, "the learner saved no policy to continue from")
    return state
