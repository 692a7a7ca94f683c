"""A worker that only reports what it can see and do; `rewardsmith doctor` runs it in each backend.

It proves the interpreter and package load in the sandbox (the first line) and prints, as JSON, the
isolation a worker actually gets: its uid, capabilities, network interfaces, environment names,
whether the root filesystem, the package and /var/tmp are writable, which host directories show it
anything besides its own paths (homes, /var/tmp, /run: where other runs and socket files live),
and whether it can open a TCP socket.
"""

from __future__ import annotations

import json
import os
import socket
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


HOST_DIRS = ("/root", "/home", "/var/tmp", "/run", "/srv", "/mnt")


def _shows_host_files(directory: str) -> bool:
    """Whether `directory` lists anything but the way to the worker's own paths (interpreter,
    package, job dir): an empty mount point, or one holding only those, shows nothing of the host."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return False
    own = [Path(sys.prefix), Path(sys.base_prefix), Path(rewardsmith.__file__).parent, Path.cwd()]
    return any(not any(p.is_relative_to(Path(directory) / entry) for p in own) for entry in entries)


def _tcp_socket() -> bool:
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except OSError:
        return False
    return True


def facts() -> dict[str, object]:
    """The isolation this worker actually gets; `live_check` parses it from the last output line."""
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
        "var_tmp_writable": _writable(Path("/var/tmp")),
        "host_dirs_listable": [d for d in HOST_DIRS if _shows_host_files(d)],
        "tcp_socket": _tcp_socket(),
        "pid": os.getpid(),
        "visible_processes": sum(name.isdigit() for name in os.listdir("/proc")),
    }


if __name__ == "__main__":
    print(f"rewardsmith worker ok: Python {sys.version.split()[0]}, numpy {numpy.__version__}")
    print(json.dumps(facts()))
