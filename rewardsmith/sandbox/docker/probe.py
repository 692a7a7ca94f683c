"""A worker that only reports what it can see and do; `rewardsmith doctor` runs it in each backend.

It proves the interpreter and package load in the sandbox (the first line) and prints, as JSON, the
isolation a worker actually gets: its uid, capabilities, network interfaces, environment names,
and whether the root filesystem and the package are writable.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy

import rewardsmith


def _writable(directory: Path) -> bool:
    """Try to create a file (and remove it at once): the only sure test of a writable directory."""
    path = directory / f".rewardsmith-probe-{os.getpid()}"
    try:
        path.write_text("probe")
    except OSError:
        return False
    path.unlink()
    return True


def facts() -> dict[str, object]:
    status = dict(
        line.split(":\t", 1)
        for line in Path("/proc/self/status").read_text().splitlines()
        if ":\t" in line
    )
    interfaces = [
        line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:]
    ]
    package = Path(rewardsmith.__file__).parent
    return {
        "uid": os.getuid(),
        "capabilities": status.get("CapEff", "?").strip(),
        "interfaces": interfaces,
        "environment": sorted(os.environ),
        "root_writable": _writable(Path("/")),
        "package_writable": _writable(package),
        "cwd_writable": _writable(Path.cwd()),
        "pid": os.getpid(),
        "visible_processes": sum(name.isdigit() for name in os.listdir("/proc")),
    }


if __name__ == "__main__":
    print(f"rewardsmith worker ok: Python {sys.version.split()[0]}, numpy {numpy.__version__}")
    print(json.dumps(facts()))
