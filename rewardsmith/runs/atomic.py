"""Atomic file writes for the run store: a reader sees the old file or the new one, never half.

The writers are the sandbox package's (`rewardsmith.atomic`, which the sandboxed programs
use too, importing nothing from the run store): a temp file in the target's directory (`O_EXCL`,
never following a link), flushed and fsynced, renamed over the target with `os.replace`, then the
directory fsynced so that the rename itself survives a power cut. A crash before the rename leaves
the old file intact and at worst a hidden `.<name>.<random>.tmp` file, which the run store never
reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rewardsmith.atomic import fsync_dir, to_json, write_bytes, write_json, write_text

__all__ = ["fsync_dir", "read_json", "to_json", "write_bytes", "write_json", "write_text"]


def read_json(path: Path) -> Any:
    """Parse the JSON file at `path`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
