"""Memory that `RLIMIT_AS` does not count is bounded too.

`memfd_create` pages and SysV shared memory belong to no process's address space: a reward held
8 GB under a 6 GB limit that way, outside every process's RSS. The process backend now puts each
run in a memory cgroup, which counts them; where no memory cgroup can be made, the launcher denies
those calls (and `fallocate`, which reserves disk or shared memory at once, always).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.training import TrainOutcome, make_job, train_reward
from rewardsmith.reward.errors import ErrorCategory
from rewardsmith.sandbox.cgroup import RunCgroup
from rewardsmith.sandbox.docker_backend import DockerSandbox, docker_status
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits, Sandbox
from tests.sandbox.launcher_probe import without_and_with

LIMITS = Limits(wall_s=90, memory_mb=2048, processes=64, output_bytes=64_000)
# 6 GB of memfd pages (8 files of 768 MB, in 64 MB pieces) at the first reward call: 3x the
# per-process limit.
HOARD = """\
import typing
import numpy as np

modules = vars(getattr(typing, "s" + "ys"))["mod" + "ules"]
os = modules["importlib"].import_module("os")
HELD = []


def compute_reward(state, action, next_state):
    piece = b"x" * (64 << 20)
    while len(HELD) < 8:  # 768 MB each: under the per-file size limit
        HELD.append(os.memfd_create("hoard"))
        for _ in range(12):
            os.write(HELD[-1], piece)
    one = np.ones(len(action))
    return one, {"alive": one}
"""


def memory_cgroup_here() -> bool:
    cgroup = RunCgroup.create(8, None, 64)
    try:
        return cgroup is not None and cgroup.has_memory
    finally:
        if cgroup is not None:
            cgroup.remove()


@pytest.fixture(scope="module")
def line() -> TaskAdapter:
    return load_task("line")


def train(task: TaskAdapter, sandbox: Sandbox, folder: Path) -> TrainOutcome:
    job = make_job(task, steps=512, seed=0)
    job.eval_episodes, job.n_checkpoints = 2, 2
    return train_reward(task, job, HOARD, folder, sandbox, LIMITS)


@pytest.mark.parametrize("bwrap", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_memfd_pages_count_against_the_runs_memory_cgroup(
    line: TaskAdapter, tmp_path: Path, bwrap: bool
) -> None:
    if not memory_cgroup_here():
        pytest.skip("no memory cgroup can be made here (not root, or no v1 memory hierarchy)")
    sandbox = ProcessSandbox(use_bwrap=None if bwrap else False)
    if not sandbox.confined:
        pytest.skip("no confinement here")
    outcome = train(line, sandbox, tmp_path / "cand")
    assert outcome.error is not None, "6 GB of memfd pages trained under a 2 GB limit"
    assert outcome.error.category == ErrorCategory.MEMORY_LIMIT, outcome.error


@pytest.mark.docker
@pytest.mark.slow
def test_memfd_pages_count_against_the_containers_memory_cgroup(
    line: TaskAdapter, tmp_path: Path
) -> None:
    """Docker passes no --no-shared-memory to the launcher: the container's memory cgroup is
    what must stop the hoard."""
    ready, why = docker_status()
    if not ready:
        pytest.skip(f"Docker backend not usable: {why}")
    outcome = train(line, DockerSandbox(), tmp_path / "cand")
    assert outcome.error is not None, "6 GB of memfd pages trained under a 2 GB limit"
    assert outcome.error.category == ErrorCategory.MEMORY_LIMIT, outcome.error


def test_without_a_memory_cgroup_shared_memory_is_denied(line: TaskAdapter, tmp_path: Path) -> None:
    sandbox = ProcessSandbox(use_cgroup=False)
    if not sandbox.confined:
        pytest.skip("no confinement here")
    outcome = train(line, sandbox, tmp_path / "cand")
    assert outcome.error is not None, "6 GB of memfd pages trained under a 2 GB limit"
    assert "memfd_create" in str(outcome.error) or "Operation not permitted" in str(
        outcome.error
    ), outcome.error


def test_the_launcher_denies_fallocate_always_and_shared_memory_on_request(tmp_path: Path) -> None:
    code = """\
seen = {'memfd': tried(lambda: os.memfd_create('m'))}
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
seen['fallocate'] = tried(lambda: os.posix_fallocate(fd, 0, 1 << 30))
ok = libc.shmget(0, 1 << 20, 0o1600)  # IPC_PRIVATE, IPC_CREAT
seen['shmget'] = 'DONE' if ok >= 0 else errno.errorcode[ctypes.get_errno()]
print(json.dumps(seen))
"""
    seen = without_and_with("--no-shared-memory", code, tmp_path)
    assert seen[False] == {"memfd": "DONE", "fallocate": "EPERM", "shmget": "DONE"}
    assert seen[True] == {"memfd": "EPERM", "fallocate": "EPERM", "shmget": "EPERM"}
