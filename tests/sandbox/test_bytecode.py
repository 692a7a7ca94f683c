"""The package's bytecode is compiled before sandboxed programs start, which cannot write it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import rewardsmith
from rewardsmith.sandbox.bytecode import compile_package


def test_a_programs_modules_have_current_bytecode_after_the_compile() -> None:
    # (Not imported here: the evaluator marks TensorBoard absent in the process importing it.)
    source = Path(rewardsmith.__file__).parent / "programs" / "evaluate_sb3.py"
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.unlink(missing_ok=True)  # as after a fresh clone, or with PYTHONDONTWRITEBYTECODE
    assert compile_package.__wrapped__()
    # Current: the header records the source's mtime and size, as the import system checks.
    header = cached.read_bytes()[:16]
    stat = source.stat()
    assert int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
    assert int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF


def test_the_evaluator_never_imports_tensorboard() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, rewardsmith.programs.record_video; "
        "print('tensorboard' in sys.modules, 'torch.utils.tensorboard' in sys.modules and "
        "sys.modules['torch.utils.tensorboard'] is not None)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert shown.stdout.split() == ["False", "False"]
