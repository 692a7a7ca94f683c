"""What each sandboxed program costs before it does any work: its start-up to `main`.

Every candidate pays several program starts (smoke test, bank scoring, training, evaluation, and a
video for the round's best), each a fresh `python -m rewardsmith.programs.X` in the process
sandbox. This starts each program there with no arguments (it stops at reading them, after every
import) and times it. It also times `import stable_baselines3` outside any sandbox with
TensorBoard's writer importable and marked absent (`programs/no_tensorboard.py`, which the
evaluator and the video program import first), and with only the optional packages TensorBoard and
SB3 look for marked absent (boto3, fsspec, `tqdm.rich`: `programs/no_remote_logging.py`, which the
training worker imports first), alternated start by start. Run:

    .venv/bin/python benchmarks/program_startup.py --reps 5

Writes benchmarks/results/program_startup.json and .md (see docs/benchmarks.md). Compare the two
imports as a difference within one run: the machines are shared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

RESULTS = Path(__file__).resolve().parent / "results"
PROGRAMS = ("train_sb3", "evaluate_sb3", "record_video", "smoke", "score")
SB3_IMPORT = "import stable_baselines3"
NO_TENSORBOARD = "import sys; sys.modules['torch.utils.tensorboard'] = None; "
NO_REMOTE_LOGGING = "import rewardsmith.programs.no_remote_logging; "
SB3_STATES = {
    "tensorboard": "",
    "no tensorboard": NO_TENSORBOARD,
    "tensorboard, no remote packages": NO_REMOTE_LOGGING,
}


def start_once(sandbox: ProcessSandbox, program: str, workdir: Path) -> float:
    """Seconds from the sandbox's start to the program's exit at its missing arguments."""
    start = time.monotonic()
    sandbox.run(f"rewardsmith.programs.{program}", [], [workdir], Limits(wall_s=120), None, [])
    return time.monotonic() - start


def sb3_import_once(prefix: str) -> float:
    """Seconds of a fresh interpreter that imports SB3 (after `prefix`) and exits."""
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", prefix + SB3_IMPORT], check=True)
    return time.monotonic() - start


def measure(reps: int) -> list[dict[str, Any]]:
    """Each program's start, and SB3's import with and without TensorBoard, `reps` times."""
    sandbox = ProcessSandbox()
    times: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        workdir = Path(scratch)
        workdir.chmod(0o777)  # the sandbox's user writes nothing here, but may enter it
        for _ in range(reps):
            for program in PROGRAMS:
                times.setdefault((program, "sandboxed"), []).append(
                    start_once(sandbox, program, workdir)
                )
            for state, prefix in SB3_STATES.items():
                times.setdefault(("import stable_baselines3", state), []).append(
                    sb3_import_once(prefix)
                )
    return [
        {"what": what, "state": state, "median_s": statistics.median(ts), "times_s": ts}
        for (what, state), ts in times.items()
    ]


def write(rows: list[dict[str, Any]], reps: int) -> None:
    """The rows as JSON, and a table of medians."""
    meta = {
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.node()} ({os.cpu_count()} cores)",
        "command": f"benchmarks/program_startup.py --reps {reps}",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "program_startup.json").write_text(json.dumps({**meta, "rows": rows}, indent=2))
    medians = {(r["what"], r["state"]): r["median_s"] for r in rows}
    lines = [
        f"# Program start-up ({meta['date']}, {meta['machine']}, `{meta['command']}`)",
        "",
        "| program | start-up to main, in the process sandbox |",
        "|---|---|",
    ]
    for program in PROGRAMS:
        lines.append(f"| {program} | {medians[(program, 'sandboxed')]:.2f} s |")
    with_tb = medians[("import stable_baselines3", "tensorboard")]
    without = medians[("import stable_baselines3", "no tensorboard")]
    local = medians[("import stable_baselines3", "tensorboard, no remote packages")]
    lines += [
        "",
        f"`import stable_baselines3`: {with_tb:.2f} s with TensorBoard's writer, {without:.2f} s "
        f"with it marked absent ({with_tb - without:+.2f} s), {local:.2f} s with it but boto3, "
        f"fsspec and `tqdm.rich` marked absent ({with_tb - local:+.2f} s). Medians of {reps} "
        "starts each.",
    ]
    (RESULTS / "program_startup.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    """Measure, write the results, print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5, help="starts per program and state")
    args = parser.parse_args()
    rows = measure(args.reps)
    write(rows, args.reps)
    print((RESULTS / "program_startup.md").read_text())


if __name__ == "__main__":
    main()
