"""`--fitness task|human|blend`: the rule that picks a round's best and the run's best, its
fallbacks to task fitness, the select node's record of it, and the option's usage check."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from rewardsmith.choices import Fitness, Judge
from rewardsmith.cli import app
from rewardsmith.eureka_loop.config import LoopConfig
from rewardsmith.eureka_loop.selection import select
from rewardsmith.eureka_loop.selection_rule import SelectionRule, human_scores
from rewardsmith.eureka_loop.state import CandidateSummary
from rewardsmith.runs.judgements import RoundJudgements
from tests.eureka_loop.select_run import SelectRun


def _cand(round_: int, idx: int, fitness: float | None) -> CandidateSummary:
    return {"round": round_, "idx": idx, "fitness": fitness, "status": "trained"}


INCUMBENT = _cand(0, 1, 300.0)
LOW, MID, HIGH = _cand(1, 0, 100.0), _cand(1, 1, 200.0), _cand(1, 2, 400.0)
ROUND = [LOW, MID, HIGH]


def test_task_fitness_is_todays_rule_whatever_the_person_chose() -> None:
    rule = SelectionRule(Fitness.TASK, human={"r01c00": 2.0})
    assert rule.pick(INCUMBENT, ROUND) == (HIGH, HIGH)
    assert not rule.by_people(ROUND) and rule.notes == []


def test_human_fitness_follows_the_scores_and_the_incumbent_keeps_a_tie() -> None:
    scores = {"r00c01": 0.5, "r01c00": 1.0, "r01c01": -0.5, "r01c02": -1.0}
    assert SelectionRule(Fitness.HUMAN, human=scores).pick(INCUMBENT, ROUND) == (LOW, LOW)
    beaten = {**scores, "r00c01": 1.5}
    assert SelectionRule(Fitness.HUMAN, human=beaten).pick(INCUMBENT, ROUND) == (LOW, INCUMBENT)
    tied = {"r00c01": 1.0, "r01c00": 1.0}  # equal scores: the higher task fitness (300 > 100)
    assert SelectionRule(Fitness.HUMAN, human=tied).pick(INCUMBENT, ROUND)[1] is INCUMBENT


def test_a_candidate_never_compared_ranks_below_every_compared_one() -> None:
    rule = SelectionRule(Fitness.HUMAN, human={"r01c00": -2.0, "r01c01": -1.0})
    assert rule.pick(None, ROUND) == (MID, MID)  # HIGH is fitter but nobody saw it in a pair


def test_without_any_choice_the_round_is_selected_on_task_fitness_and_says_so() -> None:
    rule = SelectionRule(Fitness.HUMAN, margin=0.0, human={})
    assert rule.pick(INCUMBENT, ROUND) == (HIGH, HIGH)
    assert rule.notes == ["round 1: no human choice about its candidates; selected on task fitness"]
    only_incumbent = SelectionRule(Fitness.BLEND, human={"r00c01": 0.0})
    assert only_incumbent.pick(INCUMBENT, ROUND) == (HIGH, HIGH)
    assert only_incumbent.notes


def test_an_incumbent_the_person_never_compared_is_weighed_on_task_fitness() -> None:
    rule = SelectionRule(Fitness.HUMAN, margin=150.0, human={"r01c02": 1.0, "r01c00": -1.0})
    assert rule.pick(INCUMBENT, ROUND) == (HIGH, INCUMBENT)  # 400 is within 300 + 150
    assert "r00c01, was not compared on round 1's page" in rule.notes[0]


def test_blend_ranks_on_the_mean_of_both_ranks_ties_to_task_fitness() -> None:
    # task ranks: HIGH 1, INCUMBENT 2, MID 3, LOW 4; human ranks: LOW 1, MID 2, INCUMBENT 3, HIGH 4
    scores = {"r00c01": 0.0, "r01c00": 2.0, "r01c01": 1.0, "r01c02": -3.0}
    # means: HIGH 2.5, INCUMBENT 2.5, MID 2.5, LOW 2.5: every tie goes to the fitter, HIGH
    assert SelectionRule(Fitness.BLEND, human=scores).pick(INCUMBENT, ROUND) == (HIGH, HIGH)
    # MID now also preferred to LOW: MID's mean 2 beats everyone's
    scores = {**scores, "r01c01": 3.0}
    assert SelectionRule(Fitness.BLEND, human=scores).pick(INCUMBENT, ROUND) == (MID, MID)


def test_human_scores_come_from_the_rounds_stored_choices(tmp_path: Path) -> None:
    store = RoundJudgements(tmp_path, 1)
    store.append("r01c00", "r00c01", "left")
    store.append("r01c01", "r01c00", "both_bad")
    scores = human_scores(tmp_path, 1)
    assert set(scores) == {"r01c00", "r01c01", "r00c01"}
    assert max(scores, key=lambda k: scores[k]) == "r01c00"
    assert human_scores(tmp_path, 0) == {}


class _Run(SelectRun):
    """The select node's stand-in run, with a folder for the round's judgement files."""

    def __init__(self, rows: list[dict], root: Path) -> None:
        super().__init__(rows, root)
        self.path = root


def _select(tmp_path: Path, fitness: str, state: dict[str, Any]) -> tuple[dict, list[str], _Run]:
    messages: list[str] = []
    run = _Run([*state["candidates"], state["best"]], tmp_path)
    ctx = SimpleNamespace(
        run=run,
        reporter=SimpleNamespace(message=messages.append, best=lambda summary: None),
        config=SimpleNamespace(
            fitness_target=None,
            round_retries=2,
            rounds=3,
            confirm_best=False,
            videos="none",
            judge="human",
            fitness=fitness,
        ),
        budget=None,
    )
    return select(state, SimpleNamespace(context=ctx)), messages, run  # type: ignore[arg-type]


def test_the_select_node_ranks_by_the_persons_choices_and_records_them(tmp_path: Path) -> None:
    store = RoundJudgements(tmp_path, 1)
    store.append("r01c00", "r00c01", "left")  # the person prefers the least fit candidate
    store.append("r01c00", "r01c02", "left")
    state = {"round": 1, "attempt": 0, "candidates": [LOW, HIGH], "best": INCUMBENT}
    update, messages, run = _select(tmp_path, "human", state)
    assert update["best"] is LOW
    entry = run.entry
    assert (entry["round_best"], entry["best"]) == ("r01c00", "r01c00")
    assert entry["fitness"] == "human" and entry["selected_on"] == "human"
    assert set(entry["human_scores"]) == {"r01c00", "r00c01", "r01c02"}
    assert entry["selection_note"] is None and messages == []
    assert run.summary["best_candidate"] == "r01c00"


def test_the_select_node_notes_a_round_without_choices(tmp_path: Path) -> None:
    state = {"round": 1, "attempt": 0, "candidates": [LOW, HIGH], "best": INCUMBENT}
    update, messages, run = _select(tmp_path, "blend", state)
    assert update["best"] is HIGH
    assert run.entry["selected_on"] == "task" and run.entry["human_scores"] == {}
    assert "no human choice" in run.entry["selection_note"]
    assert messages == [run.entry["selection_note"]]


def test_fitness_by_people_needs_a_person_to_judge() -> None:
    with pytest.raises(ValueError, match="add --judge human"):
        LoopConfig(task_id="cartpole", fitness=Fitness.HUMAN)
    config = LoopConfig(task_id="cartpole", judge=Judge.HUMAN, fitness="blend")  # type: ignore[arg-type]
    assert LoopConfig.from_dict(config.to_dict()).fitness == Fitness.BLEND  # resume keeps it
    assert LoopConfig.from_dict({"task_id": "cartpole"}).fitness == Fitness.TASK  # an older run


def test_the_run_command_refuses_fitness_human_without_judge_human(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "cartpole", "--fitness", "human", "--runs-dir", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "add --judge human" in " ".join(result.output.split())
    assert not list(tmp_path.iterdir())  # no run was created
