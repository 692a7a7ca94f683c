"""A run's time per round, from each graph node's recorded wall time (`eureka_loop/timing.py`):
training against the loop's own cost (designing, the critic's smoke tests, the preference check,
analysis, selection and filming). No heavy imports: `show` prints it too."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

TRAINING_NODES = frozenset({"train"})
"""Nodes whose time is training (with the reward-free evaluator after each training)."""
ROUND_NODES = ("design", "critique", "preference_check", "train", "analyze", "select")


def loop_time(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Per round (rows of the round nodes only): the mean seconds of training, of the rest, and
    of each other node; None where no round finished its nodes."""
    rounds: dict[tuple[int, int], dict[str, float]] = {}
    for row in rows:
        if row["node"] in ROUND_NODES:
            nodes = rounds.setdefault((row["round"], row["attempt"]), {})
            nodes[row["node"]] = nodes.get(row["node"], 0.0) + float(row["wall_s"])
    complete = [nodes for nodes in rounds.values() if "select" in nodes]
    if not complete:
        return None
    others = [n for n in ROUND_NODES if n not in TRAINING_NODES]
    return {
        "rounds": len(complete),
        "training_s": statistics.fmean(
            sum(n.get(k, 0.0) for k in TRAINING_NODES) for n in complete
        ),
        "loop_s": statistics.fmean(sum(n.get(k, 0.0) for k in others) for n in complete),
        "nodes_s": {k: statistics.fmean(n.get(k, 0.0) for n in complete) for k in others},
    }


def loop_time_text(summary: Mapping[str, Any] | None) -> str | None:
    """One line: the loop's own seconds per round beside training's, and the largest parts."""
    if not summary:
        return None
    parts = sorted(summary["nodes_s"].items(), key=lambda item: -item[1])
    detail = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in parts if seconds >= 0.05)
    return (
        f"time per round: training {summary['training_s']:.1f} s, the loop's own "
        f"{summary['loop_s']:.1f} s ({detail})"
    )
