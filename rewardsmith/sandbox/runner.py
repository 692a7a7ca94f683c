"""One way to run a sandboxed program and read back what it wrote.

Training, evaluation, the smoke test, bank scoring and the doctor's probe all go through
`run_job`: it makes the program's one writable directory fresh and writes its inputs there before
the sandbox starts (`workdirs`), runs it with the backend's polling loop, keeps the output in a log
outside every writable directory, classifies an abnormal exit with the one classifier below, and
reads the program's record only through `worker_files` and a schema check. What comes back is
the run, the checked record, or one named error; never a traceback.

It also caps the directory on every backend (`disk_usage`): measured at each poll and once after
the program exits, past `Limits.disk_mb` or `Limits.disk_files` beyond its inputs the program is
killed, fails with `disk_limit`, and what it wrote is removed (the run goes on). Between two
polls a program can pass the cap by what plain writes manage in 0.25 s, each file within
`RLIMIT_FSIZE`; `fallocate` (gigabytes in a microsecond) is refused to it by seccomp. A check's
scratch directory (`scratch=True`) is removed once its record has been read, whatever the outcome.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.atomic import write_text
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox.disk_usage import DiskLimitExceeded, DiskWatch, Usage
from rewardsmith.sandbox.types import Limits, Sandbox, SandboxRun
from rewardsmith.sandbox.workdirs import Input, discard, fresh_dir, is_inside, remove, write_inputs
from rewardsmith.sandbox.worker_files import MissingWorkerFile, WorkerFileError

TAIL_CHARS = 2000
MB = 1024 * 1024
DISK_LIMIT = ErrorCategory.DISK_LIMIT


@dataclass
class JobRun:
    """What became of one sandboxed program: its run, its checked record, or the named error."""

    run: SandboxRun
    record: Any = None
    error: RewardError | None = None


def run_job(
    sandbox: Sandbox,
    module: str,
    args: list[str],
    *,
    workdir: Path,
    inputs: Mapping[str, Input],
    limits: Limits,
    log_path: Path | None,
    read: Callable[[Path], Any] | None = None,
    what: str | None = None,
    readable: Sequence[Path] = (),
    on_poll: Callable[[], None] | None = None,
    discard_inputs: Sequence[str] = (),
    scratch: bool = False,
) -> JobRun:
    """Run `python -m module *args` with `workdir` (made fresh, holding `inputs`) its only
    writable directory; `read(workdir)` returns the checked record or raises `WorkerFileError`.

    `what` prefixes error messages ("smoke test on cartpole: ..."); `discard_inputs` names input
    copies too large to keep, unlinked after the run; `scratch` removes `workdir` afterwards
    (a check's folder). Exceptions from `on_poll` (a cancel) pass.
    """
    if log_path is not None and is_inside(log_path, workdir):
        raise ValueError(f"the log {log_path} must not be inside the writable {workdir}")
    fresh_dir(workdir)
    write_inputs(workdir, inputs)
    watch = DiskWatch(workdir, limits.disk_mb * MB, limits.disk_files)
    job: JobRun | None = None
    try:
        run, over = _run_watched(sandbox, module, args, workdir, limits, on_poll, readable, watch)
        if over is not None:
            error = disk_limit_error(over, watch, limits, what)
            error.traceback = run.output[-TAIL_CHARS:] or None
            run.output += f"\n[{error}]\n"
            job = JobRun(run, error=error)
        _write_log(log_path, run)
        if job is None:
            job = _read_back(run, workdir, limits, read, what)
        return job
    finally:
        discard(workdir, discard_inputs)
        if scratch or _is_disk_limit(job):
            _clear(workdir, job, keep=not scratch)


def _is_disk_limit(job: JobRun | None) -> bool:
    return job is not None and job.error is not None and job.error.category is DISK_LIMIT


def _run_watched(
    sandbox: Sandbox,
    module: str,
    args: list[str],
    workdir: Path,
    limits: Limits,
    on_poll: Callable[[], None] | None,
    readable: Sequence[Path],
    watch: DiskWatch,
) -> tuple[SandboxRun, Usage | None]:
    """The run, and the directory's usage where it passed a cap: at a poll (the program was
    killed there) or once it exited (a program faster than one poll)."""
    start = time.monotonic()
    over: Usage | None
    try:
        run = sandbox.run(module, args, [workdir], limits, watch.poll(on_poll), list(readable))
    except DiskLimitExceeded as stop:
        # The backend killed it and dropped its output along with the run.
        wall_s = time.monotonic() - start
        run = SandboxRun(None, False, wall_s, "", 0, sandbox.name, limit_hit="disk")
        over = stop.usage
    else:
        over = watch.check()
    if over is not None and over.problem is None:
        over = watch.final()  # the stopped walk's count is a lower bound: say how much it was
    return run, over


def _read_back(
    run: SandboxRun,
    workdir: Path,
    limits: Limits,
    read: Callable[[Path], Any] | None,
    what: str | None,
) -> JobRun:
    """The checked record of a clean exit, or the named error."""
    if run.returncode != 0 or run.timed_out or run.limit_hit:
        return JobRun(run, error=classify_failure(run, limits, what))
    if read is None:
        return JobRun(run)
    try:
        return JobRun(run, record=read(workdir))
    except MissingWorkerFile:
        return JobRun(run, error=classify_failure(run, limits, what))
    except WorkerFileError as bad:
        return JobRun(run, error=bad_output(bad, run, what))


def _write_log(log_path: Path | None, run: SandboxRun) -> None:
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        write_text(log_path, run.output)


def _clear(workdir: Path, job: JobRun | None, keep: bool) -> None:
    """Remove `workdir` (`keep`: leave it empty); one that cannot be removed is a warning."""
    try:
        if keep:
            fresh_dir(workdir)
        else:
            remove(workdir)
    except (OSError, RecursionError) as error:  # rmtree recurses once per level
        if job is not None:
            job.run.warnings.append(f"could not remove {workdir}: {type(error).__name__}")


def disk_limit_error(
    usage: Usage, watch: DiskWatch, limits: Limits, what: str | None = None
) -> RewardError:
    """`disk_limit`: how much the program wrote, the caps, and what to do about it."""
    cap = (
        f"its cap of {limits.disk_mb} MB and {limits.disk_files:,} files beyond its inputs "
        "(Limits.disk_mb, disk_files)"
    )
    if usage.problem is not None:
        wrote = f"the worker's directory could not be measured ({usage.problem}): past {cap}"
    else:
        added = max(0, usage.bytes - watch.inputs.bytes) / MB
        entries = max(0, usage.entries - watch.inputs.entries)
        some = "at least " if usage.entries > 10 * watch.max_entries else ""
        wrote = (
            f"the worker wrote {added:.1f} MB in {some}{entries:,} files and directories to its "
            f"directory, past {cap}"
        )
    message = (
        f"{wrote}. The run was stopped and what it wrote removed. Reward code must not write "
        "files: remove every file write (open, np.save, ...) from it"
    )
    return RewardError(DISK_LIMIT, _prefixed(what, message))


def bad_output(bad: WorkerFileError, run: SandboxRun | None, what: str | None) -> RewardError:
    """The named error for a worker file that could not be used."""
    tail = run.output[-TAIL_CHARS:] if run is not None else None
    return RewardError(ErrorCategory.BAD_WORKER_OUTPUT, _prefixed(what, str(bad)), traceback=tail)


def classify_failure(run: SandboxRun, limits: Limits, what: str | None = None) -> RewardError:
    """Turn an abnormal sandbox exit into the one named category the user sees."""
    error = _classify(run, limits)
    error.message = _prefixed(what, error.message)
    return error


def _classify(run: SandboxRun, limits: Limits) -> RewardError:
    tail = run.output[-TAIL_CHARS:]
    if run.limit_hit == "disk":
        return RewardError(
            DISK_LIMIT,
            f"the worker wrote more than its directory may hold ({limits.disk_mb} MB, "
            f"{limits.disk_files:,} files); it was killed",
            traceback=tail,
        )
    if run.limit_hit == "processes":
        return RewardError(
            ErrorCategory.PROCESS_LIMIT,
            f"the worker hit the limit of {limits.processes} processes/threads; it was killed",
            traceback=tail,
        )
    if run.timed_out:
        return RewardError(
            ErrorCategory.TIMEOUT,
            f"the worker exceeded the {limits.wall_s:.0f} s wall-clock limit; "
            "its process group was killed",
            traceback=tail,
        )
    sig = run.signal
    if sig == signal.SIGXCPU:
        return RewardError(
            ErrorCategory.TIMEOUT,
            f"the worker exceeded the {limits.cpu_s} s CPU-time limit",
            traceback=tail,
        )
    if run.limit_hit == "memory" or "MemoryError" in tail or sig == signal.SIGKILL:
        return RewardError(
            ErrorCategory.MEMORY_LIMIT,
            f"the worker ran out of its {limits.memory_mb} MB memory limit",
            traceback=tail,
        )
    if "Resource temporarily unavailable" in tail or "can't start new thread" in tail:
        return RewardError(
            ErrorCategory.PROCESS_LIMIT,
            f"the worker hit the limit of {limits.processes} processes/threads",
            traceback=tail,
        )
    if sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals.__members__.values() else str(sig)
        return RewardError(
            ErrorCategory.CRASHED, f"the worker was killed by signal {name}", traceback=tail
        )
    if run.returncode == 0:
        return RewardError(
            ErrorCategory.SANDBOX_DIED,
            "the worker exited without writing a result (exit status 0 is not success)",
            traceback=tail,
        )
    return RewardError(
        ErrorCategory.CRASHED, f"the worker exited with status {run.returncode}", traceback=tail
    )


def _prefixed(what: str | None, message: str) -> str:
    return f"{what}: {message}" if what else message
