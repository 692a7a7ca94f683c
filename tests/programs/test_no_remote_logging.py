"""The training worker starts without TensorBoard's remote filesystems or SB3's progress bar, and
still writes its TensorBoard log."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a fresh interpreter importing torch, SB3 and TensorBoard: ~3 s

# Imports the worker, then writes a scalar with torch's TensorBoard writer, as SB3's logger does.
PROBE = """
import sys
import rewardsmith.programs.train_sb3
from torch.utils.tensorboard import SummaryWriter
left_out = [name for name in ("boto3", "botocore", "fsspec", "tqdm.rich")
            if sys.modules.get(name) is not None]
writer = SummaryWriter(sys.argv[1])
writer.add_scalar("rollout/ep_rew_mean", 1.5, 1)
writer.close()
print(left_out)
"""


def test_the_worker_logs_locally_without_the_remote_packages(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["[]"]
    events = list(tmp_path.glob("events.out.tfevents.*"))
    assert len(events) == 1 and events[0].stat().st_size > 0
