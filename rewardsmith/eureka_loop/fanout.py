"""One way for a node to work on its candidates in parallel, and to stop when told to.

Critic, preference check, training and evaluation each run one sandboxed program per candidate;
the designer sends one LLM call per sample.
They fan out through `in_parallel`, so Ctrl-C (or SIGTERM, or a failure) in any of them starts
no new program and sets `Context.cancel`, which the training progress callbacks turn into a kill
of the running sandboxes (the critic's and the preference check's programs are short and end).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from rewardsmith.eureka_loop.state import Context

T = TypeVar("T")
R = TypeVar("R")


def in_parallel(
    ctx: Context,
    work: Callable[[T], R],
    items: list[T],
    name: str = "node",
    workers: int | None = None,
) -> list[R]:
    """`work` on each item, `workers` (default `ctx.config.parallel`) at a time; the results
    in the items' order. LLM calls wait on the network, not the CPU: the designer runs all its
    samples at once."""
    with ThreadPoolExecutor(
        max_workers=max(1, workers or ctx.config.parallel), thread_name_prefix=name
    ) as pool:
        futures = [pool.submit(work, item) for item in items]
        try:
            return [future.result() for future in futures]
        except BaseException:
            ctx.cancel.set()
            for future in futures:
                future.cancel()
            raise
