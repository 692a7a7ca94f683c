"""What the SB3 programs that never log leave out of their start-up."""

from __future__ import annotations


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
