"""Run a short Python snippet under the confine launcher, with and without a flag, and read back
the JSON it prints: how the launcher's flags are seen to deny what they name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from rewardsmith.sandbox.process_isolation import interpreter_paths

TRIED = """\
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def tried(action):
    try:
        action()
        return 'DONE'
    except OSError as exc:
        return errno.errorcode[exc.errno]
"""
"""The snippet's preamble: `tried(action)` is 'DONE' or the errno's name; `libc` for raw calls."""


def without_and_with(flag: str, code: str, tmp_path: Path) -> dict[bool, Any]:
    """`TRIED + code` run by the launcher (the interpreter and /usr readable, `tmp_path`
    writable, a fresh path in it as argv[1]) without `flag`, then with it: what each printed."""
    read = [*interpreter_paths(), Path("/usr"), Path("/etc/ld.so.cache")]
    grants = [*(a for p in read for a in ("--read", str(p))), "--write", str(tmp_path)]
    seen = {}
    for flags in ([], [flag]):
        command = [sys.executable, "-m", "rewardsmith.sandbox.confine", *grants, *flags, "--"]
        done = subprocess.run(
            [*command, sys.executable, "-c", TRIED + code, str(tmp_path / f"file{len(flags)}")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        seen[bool(flags)] = json.loads(done.stdout)
    return seen
