"""Compile the package's bytecode before the first sandboxed program starts.

Every program (training worker, evaluator, smoke test, ...) is a fresh `python -m rewardsmith...`
run as a user that cannot write the package's folder, so where no `__pycache__` is there (an
editable install, a checkout, or `PYTHONDONTWRITEBYTECODE` set, as in many Docker images) each one
compiles every module it imports from source: about half a second of every start, measured on
these 2-core machines. The orchestrator compiles them once, where it may write; a folder it cannot
write only means the programs go on compiling for themselves. Stale bytecode is never used: Python
checks each file's source timestamp and size, as it always does.
"""

from __future__ import annotations

import compileall
import functools
from pathlib import Path

import rewardsmith


@functools.cache
def compile_package() -> bool:
    """Compile `rewardsmith`'s modules that have no current bytecode (once per process)."""
    package = Path(rewardsmith.__file__).parent
    try:
        return bool(compileall.compile_dir(package, quiet=2))
    except OSError:
        return False
