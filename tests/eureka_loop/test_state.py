"""The graph state's candidates channel: nodes return what they changed, design starts afresh."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.types import Overwrite

from rewardsmith.eureka_loop.state import CandidateSummary, LoopState, merge_candidates


def summary(round_: int, idx: int, status: str = "designed") -> CandidateSummary:
    return {"round": round_, "idx": idx, "status": status}


def test_a_changed_candidate_replaces_its_namesake_in_place_and_the_rest_stay() -> None:
    current = [summary(0, 0), summary(0, 1), summary(0, 2)]
    merged = merge_candidates(current, [summary(0, 1, "rejected")])
    assert merged == [summary(0, 0), summary(0, 1, "rejected"), summary(0, 2)]
    assert current[1]["status"] == "designed"  # the old list is not edited


def test_a_candidate_with_a_new_key_is_appended() -> None:
    merged = merge_candidates([summary(0, 0)], [summary(0, 4), summary(0, 0, "trained")])
    assert merged == [summary(0, 0, "trained"), summary(0, 4)]


def test_in_a_graph_nodes_merge_by_key_and_an_overwrite_starts_a_new_round() -> None:
    """The loop's own pattern: design overwrites, critic and train return only what they changed."""

    def design(state: LoopState) -> dict[str, Any]:
        round_ = state.get("round", 0)
        return {"candidates": Overwrite([summary(round_, i) for i in range(3)])}

    def critique(state: LoopState) -> dict[str, Any]:
        return {"candidates": [{**state["candidates"][0], "status": "rejected"}]}

    def train(state: LoopState) -> dict[str, Any]:
        pending = [c for c in state["candidates"] if c["status"] == "designed"]
        return {
            "candidates": [{**c, "status": "trained"} for c in pending],
            "round": state.get("round", 0) + 1,
        }

    graph = StateGraph(LoopState)
    for name, node in [("design", design), ("critique", critique), ("train", train)]:
        graph.add_node(name, node)
    graph.add_edge(START, "design")
    graph.add_edge("design", "critique")
    graph.add_edge("critique", "train")
    graph.add_conditional_edges("train", lambda s: END if s["round"] >= 2 else "design")
    final = graph.compile().invoke({"round": 0, "candidates": [summary(9, 9, "trained")]})
    assert final["candidates"] == [
        summary(1, 0, "rejected"),
        summary(1, 1, "trained"),
        summary(1, 2, "trained"),
    ]
