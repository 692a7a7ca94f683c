"""A fake reward process for protocol tests: it confines nothing and sends scripted frames."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FAKE_HOST = """\
import os, sys, struct, json
fd_in, fd_out = int(sys.argv[1]), int(sys.argv[2])
def send(frame):
    os.write(fd_out, struct.pack('=I', len(frame)) + frame)
send(b'J' + json.dumps({"op": "confined", "mechanisms": []}).encode())
os.read(fd_in, 1 << 20)  # the init
send(b'J' + json.dumps({"op": "ready"}).encode())
os.read(fd_in, 1 << 20)  # the layout and the call
for frame in REPLIES:
    send(frame)
os.read(fd_in, 1 << 20)
"""


def fake_reward(tmp_path: Path, replies: list[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """Make RewardProcess start a fake reward process that sends `replies` to the first call."""
    script = tmp_path / "fake_host.py"
    script.write_text(FAKE_HOST.replace("REPLIES", repr(replies)))
    real_popen = subprocess.Popen

    def popen(args: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
        return real_popen([sys.executable, str(script), *args[3:]], **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", popen)
