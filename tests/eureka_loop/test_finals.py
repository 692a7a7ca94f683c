"""The finals: the run's fittest few distinct rewards train on more seeds, and the best becomes
the one with the highest mean minus one standard error, so one lucky search seed does not pick
the run's reward (eureka_loop/finals.py)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.envs import load_task
from rewardsmith.eureka_loop.finals import Finalist, winner
from rewardsmith.eureka_loop.plan import plan_message, training_steps
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.schema import read_record
from rewardsmith.runs.store import RunStore
from rewardsmith.runs.versus_human import held_up, held_up_text
from rewardsmith.runs.views import load_view
from tests.reporters import Messages


def test_a_lucky_seed_loses_to_a_reward_that_trains_well_on_every_seed() -> None:
    lucky = Finalist(CandidateKey(0, 1), search_fitness=0.9, finals_fitness=(0.1, 0.7))
    steady = Finalist(CandidateKey(1, 0), search_fitness=0.6, finals_fitness=(0.38, 0.41))
    # The search seed does not count, and with two seeds the bound is the worse one.
    assert lucky.mean == pytest.approx(0.4) and lucky.lower_bound == pytest.approx(0.1)
    assert steady.mean < lucky.mean and steady.lower_bound == pytest.approx(0.38)
    assert winner([lucky, steady]) is steady
    # The search's best (listed first) keeps a tie.
    twin = Finalist(CandidateKey(1, 1), search_fitness=0.5, finals_fitness=(0.1, 0.7))
    assert winner([lucky, twin]) is lucky


def test_a_reward_that_fails_on_a_finals_seed_cannot_win() -> None:
    flaky = Finalist(CandidateKey(0, 2), search_fitness=1.0, finals_fitness=(1.0, None))
    assert flaky.failed and flaky.lower_bound == -math.inf
    assert flaky.to_dict()["lower_bound"] is None and flaky.fitnesses == [1.0]
    assert winner([flaky, Finalist(CandidateKey(0, 0), 0.1, (0.1,))]).key == "r00c00"


def test_the_plan_counts_the_finals_and_a_person_s_fitness_plays_none() -> None:
    line = load_task("line")
    config = LoopConfig(
        task_id="line", rounds=2, samples=3, eval_seeds=2, steps=1000, finalists=3, finalist_seeds=2
    )
    assert training_steps(config, line) == (1000, (2 * 3 + 3 * 2 + 3 * 2) * 1000)
    assert "then up to the 3 fittest on 2 more seeds each (6 trainings" in plan_message(
        config, line
    )
    off = LoopConfig(task_id="line", steps=1000, finalists=3, finalist_seeds=0)
    assert "fittest" not in plan_message(off, line)
    by_person = LoopConfig(task_id="line", steps=1000, finalists=3, judge="human", fitness="human")
    assert "fittest" not in plan_message(by_person, line)


def test_held_up_says_when_fresh_seeds_fall_short_of_the_best_s_search_result() -> None:
    check = held_up([0.87, 0.86, 0.88], [0.66, 0.70, 0.68])
    assert check is not None and check["verdict"] == "fell short"
    assert "fell short of its search result (0.87, 3 seeds) by 0.19" in (held_up_text(check) or "")
    # Two fresh seeds that agree closely say little about the noise: a 1% shortfall holds.
    assert (held_up([0.8412], [0.833, 0.829]) or {}).get("verdict") == "held"
    kept = held_up([0.85], [0.84, 0.86])  # one search seed: the fresh seeds' spread stands for it
    assert kept is not None and kept["verdict"] == "held" and held_up_text(kept) is None
    assert held_up([0.8], [0.8]) is None  # one fresh seed: no spread to judge by


@pytest.mark.slow
def test_a_run_plays_the_finals_and_evaluates_their_winner(tmp_path: Path) -> None:
    config = LoopConfig(
        task_id="line",
        rounds=1,
        samples=3,
        eval_seeds=2,
        sandbox="process",
        finalists=3,
        finalist_seeds=2,
    )
    messages = Messages()
    result = start_run(config, tmp_path, reporter=messages)
    run_dir = Path(result["run_dir"])
    finals = read_record(run_dir / "finals.json")
    keys = [f["key"] for f in finals["finalists"]]
    assert len(keys) == 3 == len(set(keys))
    # Distinct rewards only, the search's best first, each trained on its finals seed.
    codes = {
        (run_dir / f"round_{k[1:3]}" / f"cand_{k[4:6]}" / "reward.py").read_text() for k in keys
    }
    assert len(codes) == 3
    assert all(len(f["finals_fitness"]) == 2 and f["seeds"] == 2 for f in finals["finalists"])
    # Every finalist trained on the same finals seeds (common random numbers).
    seeds = {
        (j, read_record(run_dir / f"round_{k[1:3]}/cand_{k[4:6]}/finals/s{j}/job/job.json")["seed"])
        for k in keys
        for j in (0, 1)
    }
    assert len(seeds) == 2
    assert all(
        (
            run_dir / f"round_{k[1:3]}" / f"cand_{k[4:6]}" / "finals" / "s0" / "outcome.json"
        ).is_file()
        for k in keys
    )
    top = max(finals["finalists"], key=lambda f: f["lower_bound"])
    assert finals["winner"] == top["key"] == result["best_candidate"]
    assert result["best_fitness"] == pytest.approx(top["mean"])
    assert result["best_fitness_seeds"] == 2
    assert result["best_reward_path"].endswith(
        f"round_{top['key'][1:3]}/cand_{top['key'][4:6]}/reward.py"
    )
    assert any(line.startswith("finals: ") and "over 2 seeds" in line for line in messages.lines)
    # The final evaluation retrains the winner and says whether it held up.
    evaluation = read_record(run_dir / "evaluation" / "evaluation.json")
    assert evaluation["held_up"]["selected_seeds"] == 1  # the search seed
    assert evaluation["held_up"]["verdict"] in ("held", "fell short")
    # `show` and the report say what the finals decided.
    shown = CliRunner().invoke(app, ["show", str(run_dir), "--runs-dir", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    assert f"won by {finals['winner']}" in " ".join(shown.output.split())
    view = load_view(RunStore(tmp_path).open_run(run_dir))
    assert view.finals_text() is not None and "over 2 seeds" in (view.finals_text() or "")
    # Every node's time was kept: the one round's training and the loop's own time.
    assert result["loop_time"]["rounds"] == 1
    assert result["loop_time"]["training_s"] > 0
    assert "time per round: training" in " ".join(shown.output.split())
