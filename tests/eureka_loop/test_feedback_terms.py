"""The offline designer acts on a person's feedback where it names a reward term: turned down
when a sentence speaks against it, up when one speaks for it, untouched otherwise."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.feedback_terms import TURN_DOWN, TURN_UP, named_adjustments
from rewardsmith.eureka_loop.offline import Genome, OfflineDesigner, Term, heed_feedback
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.judgements import RoundJudgements
from rewardsmith.runs.store import RunStore

NAMES = ["alive_bonus", "shape_increase_x_position", "ctrl_cost", "alive"]


def test_a_term_named_with_a_word_against_it_is_turned_down_and_one_for_it_up() -> None:
    text = (
        "The alive_bonus is far too much: it just stands still.\n"
        "More shape_increase_x_position, please! ctrl_cost looks fine."
    )
    assert named_adjustments(text, NAMES) == {
        "alive_bonus": TURN_DOWN,
        "shape_increase_x_position": TURN_UP,
    }


def test_a_name_inside_another_or_a_mixed_sentence_changes_nothing() -> None:
    assert named_adjustments("alive_bonus is bad", ["alive"]) == {}  # `alive` is not named
    assert named_adjustments("less ctrl_cost but more speed is good", ["ctrl_cost"]) == {}
    assert named_adjustments(None, NAMES) == {} == named_adjustments("", NAMES)


def test_heeding_changes_the_parents_weights_and_says_so() -> None:
    parent = Genome({"ctrl_cost": 1.0}, [Term("increase", "x_position", 0.5)])
    notes = heed_feedback(
        parent, ["ctrl_cost"], "reduce ctrl_cost. shape_increase_x_position is good"
    )
    assert parent.human_weights["ctrl_cost"] == TURN_DOWN
    assert parent.shaping[0].weight == 0.5 * TURN_UP
    assert len(notes) == 2 and any("turned ctrl_cost down" in n for n in notes)


def test_the_next_rounds_offline_candidates_turn_down_what_the_person_called_bad(
    tmp_path: Path,
) -> None:
    """Round 0's written feedback names a human component of the best candidate as bad: every
    round-1 proposal starts from a parent with that component turned down, and says so."""
    run = RunStore(tmp_path).create_run("halfcheetah", {}, ["test"], seed=0)
    best = run.candidate(CandidateKey(0, 0))
    best.write("genome.json", Genome().to_dict())
    best.write_outcome({"ok": True, "components": {"forward": 1.0, "control": -0.1}})
    RoundJudgements(run.path, 0).write_feedback("The control penalty is too strong: it freezes.")
    ctx: Any = SimpleNamespace(
        run=run,
        adapter=load_task("halfcheetah"),
        config=LoopConfig(task_id="halfcheetah", seed=0),
        states_path=tmp_path / "states.npz",
    )
    from rewardsmith.jobs.smoke import record_states

    record_states(ctx.adapter, ctx.states_path, episodes=2)
    state: Any = {"round": 1, "attempt": 0, "best": {"round": 0, "idx": 0}}
    keys = [f"r01-design-r01c0{i}" for i in range(3)]
    proposals = OfflineDesigner().propose(ctx, state, [], keys)
    for proposal in proposals:
        weights = proposal.call["genome"]["human_weights"]
        assert "control" not in weights or not np.isclose(weights["control"], 1.0)
        assert "turned control down" in proposal.reply
    unmutated = [p for p in proposals if "re-weighted human component control" not in p.reply]
    assert unmutated, "some proposal leaves the component's new weight as the feedback set it"
    for proposal in unmutated:
        assert proposal.call["genome"]["human_weights"]["control"] == TURN_DOWN
    run.close()
