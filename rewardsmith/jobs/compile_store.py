"""XLA's compilation cache for the JAX backend's reward-free programs (the evaluator, the video
program), one store per program and task, shared by every run of the task.

Each of these programs compiles the same executable for every candidate of a task (the policy
network and the episode rollout; the parameters and the seed are arguments, not constants), which
costs a large share of a JAX training on MJX, and more than the rendering of a video. So their
compiled executables are kept in a store and handed to the next run of the program on the task.

The program's side is `rewardsmith.rl.jax.compile_cache.use`. Only trusted code ever writes the
store. These programs run no reward code, but their sandbox still never gets the store writable:
the program reads the task's entries (a read-only mount), copies them into its own
`xla-cache/` folder and points JAX there; afterwards the orchestrator moves the entries it added
into the store, each read as hostile input (`worker_files`) and written under a temporary name
then renamed, so no reader ever sees half an entry. The worker and the tracer get no cache: their
programs hold the reward, and a cache a candidate's sandbox could write would be a channel to the
next one.

The stores are `$REWARDSMITH_CACHE_DIR/xla-<program>/<task>` (default `~/.cache/rewardsmith`;
`REWARDSMITH_CACHE_DIR=off` turns them off). JAX's keys cover its version, the backend and the
device, so one store serves every version and machine that shares it; delete it to reclaim space.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from rewardsmith.rl.jax.compile_cache import ENTRY, SUBDIR
from rewardsmith.sandbox.workdirs import remove
from rewardsmith.sandbox.worker_files import WorkerFileError, list_names, read_bytes

CACHE_ENV = "REWARDSMITH_CACHE_DIR"
MAXENTRY_BYTES = 512 << 20
MAX_ENTRIES = 10_000
PROGRAMS = ("evaluator", "video")
"""The programs with a store: the reward-free ones."""
COPY_DISK_MB = 512
COPY_FILES = 2_000
"""What a program's private copy of its store may add to its folder, beyond its own caps."""


def store_for(task_id: str, program: str = "evaluator") -> Path | None:
    """The program's store for the task, created if missing; None when turned off or it cannot be
    created."""
    if program not in PROGRAMS:
        raise ValueError(f"no compilation store for {program!r}: one of {', '.join(PROGRAMS)}")
    root = os.environ.get(CACHE_ENV, "").strip()
    if root.lower() == "off":
        return None
    base = (
        Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "rewardsmith"
    )
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", task_id):
        return None  # only the built-in tasks have a JAX variant; never a path out of the store
    store = base.expanduser() / f"xla-{program}" / task_id
    try:
        store.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return store


def harvest(work_dir: Path, store: Path) -> int:
    """Move the entries the program added into the store; how many were new. The program's copy
    is removed either way (it would double every candidate's folder)."""
    private = work_dir / SUBDIR
    added = 0
    try:
        names = list_names(private, MAX_ENTRIES)
    except WorkerFileError:
        names = []  # none, a link, or a flood of names: nothing to keep
    for name in filter(ENTRY.fullmatch, names):
        if (store / name).exists():
            continue
        try:
            data = read_bytes(work_dir, f"{SUBDIR}/{name}", MAXENTRY_BYTES)
        except WorkerFileError:
            continue  # not a plain file: nothing to keep
        added += _write_new(store, name, data)
    remove(private)
    return added


def _write_new(store: Path, name: str, data: bytes) -> int:
    """Write `name` into the store all at once (a temporary file renamed); 1 if written."""
    try:
        handle, temporary = tempfile.mkstemp(dir=store, prefix=".incoming-")
    except OSError:
        return 0
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, store / name)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return 0
    return 1
