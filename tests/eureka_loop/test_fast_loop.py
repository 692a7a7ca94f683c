"""The loop end to end in seconds: the tiny `line` task, the real process sandbox, and either the
offline designer or an in-process scripted model. The fast tier's proof that design, critique,
preference check, training, analysis, selection and evaluation still fit together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.plan import plan_message, training_steps
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.jobs.training import make_job
from rewardsmith.runs.store import RunStore
from rewardsmith.runs.views import load_view
from tests.fake_model import ScriptedModel
from tests.reporters import Messages

TOWARD_GOAL = """Pay for progress toward the goal.

```python
import numpy as np


def compute_reward(state, action, next_state):
    progress = next_state.position - state.position
    return progress, {"progress": progress}
```
"""

# Pays for moving away from the goal: ranks the bank's good episodes below its bad ones.
AWAY_FROM_GOAL = """```python
import numpy as np


def compute_reward(state, action, next_state):
    away = next_state.distance_to_goal
    return away, {"away": away}
```
"""

SYNTAX_ERROR = """```python
def compute_reward(state, action, next_state)
    return state.position, {}
```
"""

NO_CODE = "I cannot write reward functions today."


def _json_files_without_a_version(run_dir: Path) -> list[str]:
    missing = []
    for path in sorted(run_dir.rglob("*.json")):
        record = json.loads(path.read_text())
        if not (isinstance(record, dict) and isinstance(record.get("schema_version"), int)):
            missing.append(str(path.relative_to(run_dir)))
    return missing


def test_the_offline_designer_runs_the_whole_loop_and_every_record_is_versioned(
    tmp_path: Path,
) -> None:
    config = LoopConfig(task_id="line", rounds=1, samples=2, eval_seeds=1, sandbox="process")
    messages = Messages()
    result = start_run(config, tmp_path, reporter=messages)
    run_dir = Path(result["run_dir"])
    line = load_task("line")
    assert plan_message(config, line) in messages.lines  # said before the first training
    assert [h["round"] for h in result["history"]] == [0]
    assert result["best_fitness"] is not None and result["best_fitness"] > 0  # reached +0.5
    assert result["human_fitness"] is not None and result["sparse_fitness"] is not None
    view = load_view(RunStore(tmp_path).open_run(run_dir))
    assert view.status == "finished" and view.evaluation is not None
    trained = [c for c in view.candidates if c.status == "trained"]
    assert len(trained) == 2 and all(c.outcome() and c.analysis() for c in trained)
    assert all((c.path / "reflection.md").is_file() for c in trained)
    # Each trained the plan's steps, rounded up to whole rollouts.
    steps = training_steps(config, line)[0]
    rollout = make_job(line, steps=steps, seed=0, search=True).rollout_steps
    assert all(c.steps is not None and steps <= c.steps < steps + rollout for c in trained)
    # Every JSON file of a finished run, the sandboxed programs' included, carries its version.
    assert _json_files_without_a_version(run_dir) == []


@pytest.mark.slow
def test_a_scripted_model_is_told_what_the_last_round_showed(tmp_path: Path) -> None:
    """Round 0: one good reward, one that does not parse. Round 1: no code at all, and a reward
    the preference check rejects untrained; its prompt carries round 0's reflection. The
    critic's review and the analyzer's summary go to the model too."""
    model = ScriptedModel(
        [TOWARD_GOAL, SYNTAX_ERROR, NO_CODE, AWAY_FROM_GOAL],
        by_prompt={
            "You review reward functions": "ACCEPT\nIt pays for progress toward the goal.",
            "You analyse reinforcement-learning training runs": "SUMMARY-FROM-THE-MODEL",
        },
    )
    config = LoopConfig(
        task_id="line",
        model=model.name,
        rounds=2,
        samples=2,
        round_retries=0,
        evaluate=False,
        critic_llm=True,
        analyzer_llm=True,
        sandbox="process",
    )
    result = start_run(config, tmp_path, model=model)
    run = RunStore(tmp_path).open_run(Path(result["run_dir"]))
    # The two samples of a round are asked at once: which slot got which reply is not fixed.
    fates = sorted((c["round"], c["status"], c["category"]) for c in run.candidates())
    assert fates == [
        (0, "rejected", "syntax_error"),
        (0, "trained", None),
        (1, "rejected", "extract_error"),
        (1, "rejected", "preference_rejected"),
    ]
    (trained,) = [c for c in run.candidates() if c["status"] == "trained"]
    assert result["best_candidate"] == f"r00c{trained['idx']:02d}"
    purposes = sorted(call["purpose"] for call in run.llm_calls())
    assert purposes == ["analyzer", "critic", "critic", "design", "design", "design", "design"]
    designs = [m for m in model.prompts if m[0]["content"].startswith("You are a reward engineer")]
    # The designer was told the task: its goal and its fields reached the model ...
    assert "distance_to_goal" in designs[0][1]["content"] and "+0.5" in designs[0][1]["content"]
    # ... and round 1 what round 0 showed: the best code, the model's summary of its training,
    # and why the other candidate failed.
    feedback = designs[2][1]["content"]
    assert "next_state.position - state.position" in feedback
    assert "SUMMARY-FROM-THE-MODEL" in feedback
    assert "syntax_error" in feedback
    run.close()
