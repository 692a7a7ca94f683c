"""Where the kernel has no Landlock, a check program's disk is still sealed: by seccomp.

A check program (smoke test, bank scoring, JAX trace) opens its outputs, then seals the disk
before it loads reward code. The seal used to be a read-only Landlock layer alone, so on a kernel
without Landlock (older kernels, or a Docker engine whose profile blocks it) reward code could
create files in the program's folder between the runner's polls (187-452 MB past a 20 MB cap were
measured). Now a stacked seccomp filter refuses every file creation and open for writing too. The
reward process of a training, which is granted nothing writable, gets the same refusal.

"No Landlock" is played faithfully: each program here runs under a seccomp filter that answers
`landlock_create_ruleset` with ENOSYS, which is exactly what such a kernel answers, and whatever
it starts inherits the filter. On the old code the sealed program below wrote `other.txt`, and
the smoke test passed a reward that wrote a file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.sandbox.executor import ProcessSandbox
from tests.sandbox.hostile import as_reward
from tests.sandbox.launcher_probe import TRIED

ESCAPE = (
    'import typing\nimport numpy as np\nimp = vars(getattr(typing, "s" + "ys"))["mod" + "ules"]'
    "['importlib'].import_module\n"
)
ONE_SMALL_FILE = as_reward([["note.txt", "text", "x"]], ESCAPE)  # writes note.txt when called

# Run first in each program: from here on, this process and its children see no Landlock.
NO_LANDLOCK = """\
import errno as _errno
from rewardsmith.sandbox import seccomp as _seccomp
from rewardsmith.sandbox.syscall import COMMON_SYSCALLS as _COMMON, arch as _arch
_prog = _seccomp._prologue(_arch())
for _name in ("landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"):
    _prog += [_seccomp._insn(_seccomp.JEQ_K, _COMMON[_name], jf=1), _seccomp._deny(_errno.ENOSYS)]
_seccomp._install(b"".join([*_prog, _seccomp._insn(_seccomp.RET_K, _seccomp.RET_ALLOW)]))
from rewardsmith.sandbox.landlock import landlock_abi as _abi
assert _abi() == 0, "Landlock still answers"
"""


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300
    )


SEALED_ATTEMPTS = """\
import os, sys
from pathlib import Path
from rewardsmith.programs.sealed_outputs import SealedOutputs
work = Path(sys.argv[1])
(work / "existing.txt").write_text("before")
os.mkdir(work / "empty")
outputs = SealedOutputs(work, "out.json")
path = lambda name: str(work / name)
seen = {
    "create": tried(lambda: open(path("other.txt"), "w")),
    "create_os": tried(lambda: os.open(path("other2.txt"), os.O_WRONLY | os.O_CREAT, 0o600)),
    "tmpfile": tried(lambda: os.open(str(work), os.O_TMPFILE | os.O_WRONLY, 0o600)),
    "append": tried(lambda: open(path("existing.txt"), "a")),
    "read_write": tried(lambda: os.open(path("existing.txt"), os.O_RDWR)),
    "truncate": tried(lambda: os.truncate(path("existing.txt"), 1 << 30)),
    "mkdir": tried(lambda: os.mkdir(path("folder"))),
    "rename": tried(lambda: os.rename(path("existing.txt"), path("moved.txt"))),
    "link": tried(lambda: os.link(path("existing.txt"), path("linked.txt"))),
    "symlink": tried(lambda: os.symlink("existing.txt", path("sym.txt"))),
    "unlink": tried(lambda: os.unlink(path("existing.txt"))),
    "rmdir": tried(lambda: os.rmdir(path("empty"))),
    "mkfifo": tried(lambda: os.mkfifo(path("fifo"))),
    "read": tried(lambda: open(path("existing.txt")).read()),
    "list": tried(lambda: os.listdir(str(work))),
}
outputs.write_record("out.json", seen)
"""


def test_a_sealed_program_without_landlock_writes_its_outputs_and_nothing_else(
    tmp_path: Path,
) -> None:
    done = run_python(NO_LANDLOCK + TRIED + SEALED_ATTEMPTS, str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads((tmp_path / "out.json").read_text())
    seen.pop("schema_version", None)
    assert seen.pop("read") == "DONE" and seen.pop("list") == "DONE"
    assert seen == {name: "EACCES" for name in seen}, seen
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "existing.txt", "out.json"]
    assert (tmp_path / "existing.txt").read_text() == "before"


SMOKE = """\
import json, sys
from pathlib import Path
from rewardsmith.envs import load_task
from rewardsmith.jobs.smoke import record_states, smoke_test
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

work = Path(sys.argv[1])
task = load_task("cartpole")
states = record_states(task, work / "states.npz", episodes=2)
sandbox = ProcessSandbox()
job = smoke_test(
    task, Path(sys.argv[2]).read_text(), work / "smoke", states, sandbox,
    Limits(wall_s=60, memory_mb=2048, processes=64, output_bytes=64_000),
)
error = job.error
print("RESULT " + json.dumps({
    "mechanisms": sandbox.mechanisms(),
    "category": error.category.value if error else None,
    "message": error.message if error else None,
}))
"""


def without_landlock(program: str, tmp_path: Path) -> dict[str, Any]:
    """`program` run with ONE_SMALL_FILE's path as argv[2], where Landlock answers ENOSYS; what
    it printed after `RESULT `, which must say the reward's write was refused."""
    if not ProcessSandbox(use_bwrap=True).bwrap:
        pytest.skip("without Landlock the process backend needs bubblewrap, which is not here")
    reward = tmp_path / "reward.py"
    reward.write_text(ONE_SMALL_FILE)
    done = run_python(NO_LANDLOCK + program, str(tmp_path), str(reward))
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    assert result["category"] == "runtime_error", result
    assert "PermissionError" in result["message"] and "note.txt" in result["message"], result
    return result


def test_without_landlock_the_smoke_test_refuses_a_reward_any_file(tmp_path: Path) -> None:
    result = without_landlock(SMOKE, tmp_path)
    assert not any(m.startswith("landlock") for m in result["mechanisms"]), result


TRAIN = """\
import json, sys
from pathlib import Path
from rewardsmith.envs import load_task
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

task = load_task("cartpole")
job = make_job(task, steps=512, seed=0)
job.eval_episodes, job.n_checkpoints = 2, 2
outcome = train_reward(
    task, job, Path(sys.argv[2]).read_text(), Path(sys.argv[1]) / "cand", ProcessSandbox(),
    Limits(wall_s=120, memory_mb=2048, processes=64, output_bytes=64_000),
)
error = outcome.error
print("RESULT " + json.dumps({
    "category": error.category.value if error else None,
    "message": error.message if error else None,
    "written": sorted(str(p) for p in Path(sys.argv[1]).rglob("note.txt")),
}))
"""


def test_without_landlock_the_reward_process_of_a_training_writes_no_file(tmp_path: Path) -> None:
    assert without_landlock(TRAIN, tmp_path)["written"] == []
