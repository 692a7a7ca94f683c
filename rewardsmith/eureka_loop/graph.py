"""Wiring only: the evolution loop as a LangGraph StateGraph, checkpointed to SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from rewardsmith.eureka_loop.analyzer import analyze
from rewardsmith.eureka_loop.critic import critique
from rewardsmith.eureka_loop.designer import design
from rewardsmith.eureka_loop.evaluation import evaluate
from rewardsmith.eureka_loop.finals import finals
from rewardsmith.eureka_loop.preference import preference_check
from rewardsmith.eureka_loop.selection import after_design, after_select, select
from rewardsmith.eureka_loop.state import Context, LoopState
from rewardsmith.eureka_loop.timing import timed
from rewardsmith.eureka_loop.trainer import train


def build_graph(checkpoint_db: Path) -> Any:
    """design -> critique -> preference_check -> train -> analyze -> select -> (design | finals);
    finals -> evaluate."""
    graph = StateGraph(LoopState, context_schema=Context)
    graph.add_node("design", timed("design", design))
    graph.add_node("critique", timed("critique", critique))
    graph.add_node("preference_check", timed("preference_check", preference_check))
    graph.add_node("train", timed("train", train))
    graph.add_node("analyze", timed("analyze", analyze))
    graph.add_node("select", timed("select", select))
    graph.add_node("finals", timed("finals", finals))
    graph.add_node("evaluate", timed("evaluate", evaluate))
    graph.add_edge(START, "design")
    graph.add_conditional_edges("design", after_design)
    graph.add_edge("critique", "preference_check")
    graph.add_edge("preference_check", "train")
    graph.add_edge("train", "analyze")
    graph.add_edge("analyze", "select")
    graph.add_conditional_edges("select", after_select)
    graph.add_edge("finals", "evaluate")
    graph.add_edge("evaluate", END)
    connection = sqlite3.connect(checkpoint_db, check_same_thread=False)
    return graph.compile(checkpointer=SqliteSaver(connection))
