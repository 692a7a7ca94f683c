"""The reward-free programs' side of the XLA compilation cache (`rewardsmith.jobs.compile_store`
keeps the stores): a private copy of the task's entries, and JAX pointed at it."""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

SUBDIR = "xla-cache"
ENTRY = re.compile(r"[A-Za-z0-9_.-]{1,240}-cache")
"""The names JAX gives cache entries; nothing else is copied either way."""


def use(store: Path, work_dir: Path) -> None:
    """In the program, before it compiles: a private copy of the store, and JAX pointed at it.

    A store it cannot read (a sandbox that cannot reach it) only means compiling afresh.
    """
    import jax

    private = work_dir / SUBDIR
    private.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):
        for entry in store.iterdir():
            if ENTRY.fullmatch(entry.name) and entry.is_file():
                shutil.copyfile(entry, private / entry.name)
    jax.config.update("jax_compilation_cache_dir", str(private))
    # Every program, however quick to compile: what is cached does not then depend on timing.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    # XLA's own GPU caches would live under the private folder, and their paths would enter
    # every key: no program in another folder would ever hit.
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")
