"""Where a round's time goes: each graph node's wall time, kept in the run index.

Training is what a run is for; everything else a round does (designing, the critic's smoke
tests, the preference check, analysis, selection and filming) is the loop's own cost. Each node
is timed as it runs (`timed`, wired in `graph.py`), and `runs.loop_time` sums a run's rounds
into training and the rest, which `rewardsmith run` and `show` print, so a slow round says
where its time went.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Protocol

from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.state import Context, LoopState


class Node(Protocol):
    """A graph node as LangGraph calls it: the state, and the runtime with the run's context."""

    def __call__(self, state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
        """The state update the node returns."""
        ...


def timed(name: str, node: Node) -> Node:
    """`node`, recording its wall time under `name` for the round it ran in."""

    @functools.wraps(node)
    def run(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
        start = time.monotonic()
        try:
            return node(state, runtime)
        finally:
            wall = time.monotonic() - start
            round_, attempt = state.get("round", 0), state.get("attempt", 0)
            runtime.context.run.record_node_time(round_, attempt, name, round(wall, 3))

    return run
