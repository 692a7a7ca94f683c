"""XLA's compilation cache for the reward-free evaluator, shared by every evaluation of a task.

The evaluator compiles the same program for every candidate of a task (the policy network and
the episode rollout; the parameters and the seed are arguments, not constants), which costs a
large share of a JAX training on MJX. So its compiled executables are kept in a store and handed
to the next evaluator of the task.

The evaluator's side is `rewardsmith.rl.jax.compile_cache.use`. Only trusted code ever writes the
store. The evaluator runs no reward code, but its sandbox still
never gets the store writable: it reads the task's entries (a read-only mount), copies them into
its own `eval/xla-cache/` and points JAX there; afterwards the orchestrator moves the entries it
added into the store, each read as hostile input (`worker_files`) and written under a temporary
name then renamed, so no reader ever sees half an entry. The worker and the tracer get no cache:
their programs hold the reward, and a cache a candidate's sandbox could write would be a channel
to the next one.

The store is `$REWARDSMITH_CACHE_DIR/xla-evaluator/<task>` (default `~/.cache/rewardsmith`;
`REWARDSMITH_CACHE_DIR=off` turns it off). JAX's keys cover its version, the backend and the
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


def store_for(task_id: str) -> Path | None:
    """The task's store, created if missing; None when turned off or it cannot be created."""
    root = os.environ.get(CACHE_ENV, "").strip()
    if root.lower() == "off":
        return None
    base = (
        Path(root) if root else Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")) / "rewardsmith"
    )
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", task_id):
        return None  # only the built-in tasks have a JAX variant; never a path out of the store
    store = base.expanduser() / "xla-evaluator" / task_id
    try:
        store.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return store


def harvest(eval_dir: Path, store: Path) -> int:
    """Move the entries the evaluator added into the store; how many were new. The evaluator's
    copy is removed either way (it would double every candidate's folder)."""
    private = eval_dir / SUBDIR
    added = 0
    try:
        names = list_names(private, MAX_ENTRIES)
    except WorkerFileError:
        names = []  # none, a link, or a flood of names: nothing to keep
    for name in filter(ENTRY.fullmatch, names):
        if (store / name).exists():
            continue
        try:
            data = read_bytes(eval_dir, f"{SUBDIR}/{name}", MAXENTRY_BYTES)
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
