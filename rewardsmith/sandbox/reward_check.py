"""The orchestrator half shared by the sandboxed reward checks (smoke test, bank scoring).

Each check is a module that runs inside the sandbox on one reward file and a copied input, and
writes one JSON record; this side prepares the folder, runs it, keeps the log, and turns an
abnormal exit into the named error the user sees.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.sandbox.executor import Limits, SandboxRun
from rewardsmith.sandbox.training import Sandbox, classify_failure


@dataclass
class CheckRun:
    """The check's JSON record, or the error that kept it from writing one."""

    record: dict[str, Any] | None
    error: RewardError | None
    run: SandboxRun


def run_reward_check(
    module: str,
    args: list[str],
    reward_source: str,
    work_dir: Path,
    inputs: dict[str, Path],
    result_name: str,
    sandbox: Sandbox,
    limits: Limits,
    what: str,
) -> CheckRun:
    """Run `module` on `reward_source` (as `reward.py`) and `inputs` (copied into `work_dir` by
    name, since the run's folder may be hidden from the sandbox); only `work_dir` is writable.

    The copies are removed afterwards (the run keeps the originals); the output is kept as
    `<module's last name>.log`.
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    result_path = work_dir / result_name
    result_path.unlink(missing_ok=True)
    (work_dir / "reward.py").write_text(reward_source)
    for name, source in inputs.items():
        shutil.copyfile(source, work_dir / name)
    run = sandbox.run(module, [str(work_dir), *args], [work_dir], limits)
    (work_dir / f"{module.rsplit('.', 1)[-1]}.log").write_text(run.output)
    for name in inputs:
        (work_dir / name).unlink(missing_ok=True)
    if run.returncode != 0 or run.timed_out or run.limit_hit or not result_path.exists():
        error = classify_failure(run, limits)
        error.message = f"{what}: {error.message}"
        return CheckRun(None, error, run)
    try:
        record = json.loads(result_path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        record = f"not JSON ({exc})"
    if not isinstance(record, dict) or not isinstance(record.get("status", "ok"), str):
        # Only the reward, running in the same sandbox, could have written this.
        message = f"{what}: the check's result file was overwritten: {str(record)[:200]}"
        return CheckRun(None, RewardError(ErrorCategory.SANDBOX_DIED, message), run)
    return CheckRun(record, None, run)
