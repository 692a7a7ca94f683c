"""Leave a sandboxed program without the interpreter's teardown.

The training worker and the evaluator have written everything they report (atomically, files
closed) by the time their `main` returns. What the interpreter would still do is tear down torch
and its compiler stack, module by module: measured 0.5-1.5 s per program on a quiet two-core
machine and about 4 s under load, twice per candidate, with the orchestrator waiting on it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn


def exit_now(code: int) -> NoReturn:
    """Flush stdout and stderr (the orchestrator keeps them as the log), then exit at once."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
