"""Removing what a sandboxed program left: any depth, never through a link."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from rewardsmith.sandbox.workdirs import fresh_dir, remove


def nest(top: Path, depth: int) -> None:
    """A chain of `depth` directories under `top`, made through descriptors as a program would."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
        if level % 500 == 0:
            os.symlink("/etc", "etc", dir_fd=fd)
    os.close(fd)


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path: Path) -> None:
    left = tmp_path / "smoke"
    left.mkdir()
    nest(left, 3000)  # a program makes this in ~30 ms; shutil.rmtree raised RecursionError
    outside = tmp_path / "outside.txt"
    outside.write_text("kept")
    (left / "link").symlink_to(outside)
    (left / ".removing-1").mkdir()  # a name the removal itself uses, taken already
    (left / ".removing-1" / "f").write_text("x")
    try:
        fresh_dir(left)
        assert left.is_dir() and not any(left.iterdir())
        assert outside.read_text() == "kept" and Path("/etc/passwd").exists()
        remove(left)
        assert not left.exists()
    finally:  # pytest's own cleanup of old temporary dirs recurses, and would fail on it
        subprocess.run(["rm", "-rf", "--one-file-system", str(left)], check=False)
