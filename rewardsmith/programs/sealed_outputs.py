"""Output files a check program opens before it loads reward code, then seals the disk.

The smoke test, the bank scorer and the JAX tracer run reward code in their own process. Each
opens the files it will write, then `seal_disk` (a read-only Landlock layer where the kernel has
Landlock, and a seccomp filter that refuses every file creation and open for writing, which
holds where it does not): from then on neither the program nor the reward can create, grow or
remove any other file, so reward code cannot fill the disk however fast it writes, and the
outputs are each capped by RLIMIT_FSIZE. The runner's polled cap stays behind both.

A program that dies before writing leaves an empty output, which the orchestrator reads as
missing (`worker_files.read_json`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardsmith.atomic import record_json
from rewardsmith.sandbox.confine import seal_disk

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC


class SealedOutputs:
    """The program's outputs in `work_dir`, open for writing; nothing else can be written."""

    def __init__(self, work_dir: Path, *names: str) -> None:
        self._fds = {name: os.open(work_dir / name, _FLAGS, 0o600) for name in names}
        seal_disk()

    def write_bytes(self, name: str, data: bytes) -> None:
        """Write `data` as the whole of output `name`, durably, and close it."""
        fd = self._fds.pop(name)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def write_record(self, name: str, record: Mapping[str, Any]) -> None:
        """Write `record` as a versioned JSON record (what `atomic.write_record` writes)."""
        self.write_bytes(name, record_json(record).encode())
