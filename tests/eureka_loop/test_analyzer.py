"""The trajectory analyzer and the reward-hacking flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.envs.adapter import Episode
from rewardsmith.eureka_loop.analyzer import compare_groups, ending_stats, field_stats, reflection
from rewardsmith.eureka_loop.hacking import bank_signals, spearman, training_signals
from rewardsmith.eureka_loop.no_result import NothingTrainedError
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.store import RunStore
from tests.eureka_loop.rewards import GOOD_UPRIGHT

# A proxy the policy can exploit: pays for spinning the pole, which is fastest just before it falls.
HACKABLE = """```python
import numpy as np


def compute_reward(state, action, next_state):
    spin = np.abs(next_state.pole_angular_velocity)
    return spin, {"spin": spin}
```
"""

SUMMARY = "1. The pole drifts and falls to one side: add a term for the pole's angular velocity."


def _checkpoints(returns: list[float], fitness: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "step": 1000 * (i + 1),
            "reward_return": r,
            "fitness": f,
            "episode_length": f,
            "components": {"a": r},
        }
        for i, (r, f) in enumerate(zip(returns, fitness, strict=True))
    ]


# --- hacking flags -----------------------------------------------------------------------------


def test_return_rising_while_fitness_falls_is_flagged() -> None:
    # Fitness peaks mid-training and falls while the reward keeps paying more: the textbook curve.
    hacked = training_signals(
        _checkpoints(
            [1, 2, 4, 6, 8, 9, 11, 12, 14, 15], [10, 60, 200, 450, 430, 300, 260, 220, 200, 180]
        )
    )
    assert hacked["suspect"]
    assert "after the fitness peak" in hacked["reasons"][0]
    # Reward and fitness rising together, with an ordinary dip: no flag.
    aligned = training_signals(
        _checkpoints(
            [10, 50, 90, 200, 180, 300, 420, 480, 490, 500],
            [10, 50, 90, 200, 180, 300, 420, 480, 490, 500],
        )
    )
    assert not aligned["suspect"]
    # Both falling together after a peak (a policy that got worse, not a hack): no flag.
    worse = training_signals(
        _checkpoints([10, 400, 390, 200, 180, 150, 120], [10, 400, 390, 200, 180, 150, 120])
    )
    assert not worse["suspect"]
    assert not training_signals(_checkpoints([1, 2], [2, 1]))["suspect"]  # too few points to say


def _success_checkpoints(returns: list[float], successes: list[int]) -> list[dict[str, Any]]:
    """Checkpoints of a success-rate task judged on 5 episodes each, `successes[i]` of them won."""
    points = _checkpoints(returns, [s / 5 for s in successes])
    for point, won in zip(points, successes, strict=True):
        point["fitness_per_episode"] = [1.0] * won + [0.0] * (5 - won)
    return points


def test_a_fall_within_the_checkpoints_noise_is_not_flagged() -> None:
    # A Meta-World button-press candidate (r01c03 of a kept run): 3 of 5 episodes at its peak,
    # 0 and 3 at the last two checkpoints, while SAC's return kept rising. The evaluator then
    # scored the final policy 0.8 on 10 other episodes: the "fall" was the 5 episodes' noise.
    returns = [100, 400, 700, 900, 1200, 1400, 1473, 1600, 1900, 2222]
    noisy = training_signals(_success_checkpoints(returns, [0, 0, 1, 0, 1, 2, 3, 1, 0, 3]))
    assert not noisy["suspect"]
    assert training_signals(
        _success_checkpoints(returns, [0, 0, 1, 0, 1, 2, 3, 1, 0, 3]), noise_se=0.0
    )["suspect"]  # the rule before the noise test fired on it
    # Every episode won at the peak and none at the end is a fall no noise explains.
    fell = training_signals(_success_checkpoints(returns, [0, 1, 3, 5, 5, 4, 2, 1, 1, 0]))
    assert fell["suspect"]
    assert "after the fitness peak (1 at checkpoint 4)" in fell["reasons"][0]
    assert "beyond the checkpoints' noise" in fell["reasons"][0]


def test_paying_most_in_low_fitness_episodes_is_flagged_relative_to_the_task() -> None:
    fitness = np.arange(30, dtype=np.float64)
    returns = fitness.copy()  # the returns still order episodes like fitness (an alive bonus) ...
    per_step = 30 - fitness  # ... but per step it pays most in the worst episodes
    flagged = bank_signals(fitness, returns, per_step)
    assert flagged["suspect"] and flagged["per_step_fitness_corr"] == pytest.approx(-1.0)
    assert flagged["per_step_low_fitness"] > flagged["per_step_high_fitness"]
    # Where the environment's own reward does the same (an energy cost), it is not a flag.
    assert not bank_signals(fitness, returns, per_step, reference_per_step=30 - fitness)["suspect"]
    assert not bank_signals(fitness, returns, fitness)["suspect"]
    assert spearman([1, 1, 1], [1, 2, 3]) is None


def test_a_per_step_pay_that_hardly_varies_is_not_a_hacking_flag() -> None:
    """The false positive seen on CartPole: an upright reward paying 1.07 per step in the worst
    third of the bank and 1.06 in the best third ranks against fitness (rho ~ -0.3) but is no
    hack: the gap is 1% of what it pays per step. The flag needs a gap of MIN_GAP (10%)."""
    fitness = np.arange(30, dtype=np.float64)
    per_step = 1.07 - 0.01 * fitness / 29 + 0.004 * np.sin(7 * fitness)  # noisy, slightly falling
    record = bank_signals(fitness, fitness * 1.06, per_step)
    assert record["per_step_fitness_corr"] < -0.3  # the old rule (correlation alone) fired here
    assert 0 < record["per_step_gap"] < 0.02
    assert not record["suspect"]
    # The same ranking with a real gap (twice the pay in the worst episodes) is flagged.
    assert bank_signals(fitness, fitness, 2.0 - fitness / 29 + 0.004 * np.sin(7 * fitness))[
        "suspect"
    ]


# --- trajectory statistics ---------------------------------------------------------------------


def _episode(angles: list[float], x: float, terminated: bool) -> Episode:
    n = len(angles)
    return Episode(
        states={"pole_angle": np.array([0.0, *angles]), "cart_position": np.full(n + 1, x)},
        actions=np.zeros(n, dtype=np.int64),
        env_rewards=np.ones(n),
        terminated=terminated,
        truncated=not terminated,
    )


def test_endings_name_the_field_at_an_extreme_when_episodes_fail() -> None:
    calm = [0.01, -0.01] * 20
    # Failed episodes tip over to either side; the mean angle hides that, its magnitude does not.
    failed = [
        (_episode([*calm[:10], sign * 0.1, sign * 0.21], 0.0, True), 12.0, False)
        for sign in (1, -1, 1, -1)
    ]
    succeeded = [(_episode(calm, 0.0, False), 40.0, True) for _ in range(3)]
    records = failed + succeeded
    stats = ending_stats(records, field_stats(records), has_success=True)
    assert stats["terminated_rate"] == pytest.approx(4 / 7) and stats[
        "truncated_rate"
    ] == pytest.approx(3 / 7)
    assert stats["terminated_failed"] == 4 and stats["success_rate"] == pytest.approx(3 / 7)
    assert {c["field"] for c in stats["causes"]} == {"pole_angle"}
    assert {c["side"] for c in stats["causes"]} == {"high", "low"}
    assert sum(c["episodes"] for c in stats["causes"]) == 4
    comparison = compare_groups(records, [], has_success=True)
    assert comparison is not None and comparison["low"] == "failed episodes"
    assert comparison["fields"][0]["field"] == "|pole_angle|"  # fails by tilting, not by drifting
    assert comparison["fields"][0]["smd"] < 0


def test_groups_compare_on_the_same_features_when_only_one_takes_both_signs() -> None:
    """A field with both signs only among the low-fitness episodes once crashed the analyzer
    (`|cart_position|` missing from the high group) in the middle of a run."""
    low = [(_episode([0.01] * 10, x, True), 10.0, False) for x in (-0.5, 0.5, -0.4)]
    high = [(_episode([0.01] * 40, x, False), 40.0, False) for x in (0.1, 0.2, 0.3)]
    comparison = compare_groups(low + high, [], has_success=False)
    assert comparison is not None
    fields = {row["field"]: row for row in comparison["fields"]}
    assert "|cart_position|" in fields
    assert fields["|cart_position|"]["high_mean"] == pytest.approx(0.25)


def test_the_reflection_carries_the_analysis_and_the_flag() -> None:
    checkpoints = _checkpoints([1, 2, 3, 4], [10, 20, 30, 40])
    outcome = {"fitness": 40.0, "checkpoints": checkpoints}
    analysis = {
        "endings": {
            "episodes": 10,
            "terminated_rate": 1.0,
            "truncated_rate": 0.0,
            "mean_length": 40.0,
            "causes": [],
        },
        "component_trends": [{"component": "a", "first": 1.0, "last": 4.0, "direction": "rose"}],
        "hacking": {
            "suspect": True,
            "reasons": ["over training its return rose while fitness fell"],
        },
        "llm_summary": SUMMARY,
    }
    text, data = reflection(
        outcome, "def compute_reward(state, action, next_state): ...", False, analysis
    )
    assert "How the 10 evaluation episodes ended: 100% terminated" in text
    assert "reward_hacking_suspect" in text and "over training its return rose" in text
    assert SUMMARY in text and "`a` rose (1 -> 4)" in text
    assert data["lines"]


def test_a_fitness_that_is_the_success_rate_is_listed_once() -> None:
    checkpoints = _checkpoints([1, 2, 3, 4], [0.0, 0.2, 0.6, 0.8])
    for point in checkpoints:
        point["success_rate"] = point["fitness"]
    code = "def compute_reward(state, action, next_state): ..."
    text, _ = reflection({"fitness": 0.8, "checkpoints": checkpoints}, code, True)
    assert "fitness (the success rate): [0, 0.2, 0.6, 0.8]" in text
    assert "success rate: [" not in text
    # Where fitness is something else (a score), both series are listed.
    for point in checkpoints:
        point["success_rate"] = 0.5
    text, _ = reflection({"fitness": 0.8, "checkpoints": checkpoints}, code, True)
    assert "fitness: [0, 0.2, 0.6, 0.8]" in text and "success rate: [0.5, 0.5, 0.5, 0.5]" in text


# --- end to end ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_hackable_reward_is_rejected_and_flagged_before_training(
    tmp_path: Path, scripted_llm
) -> None:
    server = scripted_llm([HACKABLE])
    config = LoopConfig(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=1,
        samples=1,
        steps=2_000,
        parallel=1,
        evaluate=False,
        sandbox="process",
        round_retries=0,
    )
    with pytest.raises(NothingTrainedError, match="rejected by the preference check"):
        start_run(config, tmp_path)
    [summary] = RunStore(tmp_path).list_runs()
    run = RunStore(tmp_path).open_run(summary.path)
    [candidate] = run.candidates()
    assert candidate["status"] == "rejected" and candidate["category"] == "preference_rejected"
    [suspect] = run.info()["summary"]["reward_hacking_suspects"]
    assert suspect["flag"] == "reward_hacking_suspect" and not suspect["trained"]
    assert "pays most per step in the low-fitness episodes" in suspect["reasons"][0]


@pytest.mark.slow
def test_a_hackable_reward_trained_without_the_check_is_flagged_in_the_cli(
    tmp_path: Path, scripted_llm
) -> None:
    server = scripted_llm([HACKABLE])
    result = CliRunner().invoke(
        app,
        [
            "run",
            "cartpole",
            "--model",
            server.model,
            "--api-base",
            server.base_url,
            "--rounds",
            "1",
            "--samples",
            "1",
            "--steps",
            "2000",
            "--parallel",
            "1",
            "--no-evaluate",
            "--no-preference-check",
            "--runs-dir",
            str(tmp_path),
            "--sandbox",
            "process",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "reward_hacking_suspect" in result.output and "r00c00" in result.output
    run_dir = next(p for p in tmp_path.iterdir() if (p / "run.json").exists())
    cand_dir = run_dir / "round_00" / "cand_00"
    assert (cand_dir / "job").exists() and not (
        cand_dir / "preference.json"
    ).exists()  # trained, unchecked
    analysis = json.loads((cand_dir / "analysis.json").read_text())
    assert (
        analysis["hacking"]["suspect"] and analysis["hacking"]["flag"] == "reward_hacking_suspect"
    )
    assert analysis["hacking"]["bank"]["per_step_fitness_corr"] < -0.3
    assert (
        "reward_hacking_suspect" in (cand_dir / "reflection.md").read_text()
    )  # told to the designer
    summary = json.loads((run_dir / "run.json").read_text())["summary"]
    assert summary["reward_hacking_suspects"][0]["candidate"] == "r00c00"


@pytest.mark.slow
def test_analyzer_llm_summary_reaches_the_reflection_and_the_record(
    tmp_path: Path, scripted_llm
) -> None:
    def respond(request: dict[str, Any]) -> str:
        content = request["messages"][-1]["content"]
        return (
            SUMMARY
            if "You analyse reinforcement-learning training runs" in content
            else GOOD_UPRIGHT
        )

    server = scripted_llm(responder=respond)
    config = LoopConfig(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=2,
        samples=1,
        steps=1_500,
        parallel=1,
        evaluate=False,
        sandbox="process",
        analyzer_llm=True,
    )
    result = start_run(config, tmp_path)
    run = RunStore(tmp_path).open_run(result["run_dir"])
    purposes = [row["purpose"] for row in run.llm_calls()]
    assert purposes.count("analyzer") == 2 and purposes.count("design") == 2
    cand_dir = Path(result["run_dir"]) / "round_00" / "cand_00"
    analysis = json.loads((cand_dir / "analysis.json").read_text())
    assert analysis["llm_summary"] == SUMMARY
    assert analysis["endings"]["episodes"] == 10
    assert {"terminated_rate", "truncated_rate", "causes"} <= set(analysis["endings"])
    assert "hacking" in analysis and "component_trends" in analysis
    analyzer_prompt = next(
        r for r in server.requests if "You analyse" in r["messages"][-1]["content"]
    )
    assert "pole_angle" in analyzer_prompt["messages"][-1]["content"]
    # Round 1's design prompt carries round 0's reflection, the LLM's reading included.
    design_prompts = [
        r["messages"][-1]["content"]
        for r in server.requests
        if "You analyse" not in r["messages"][-1]["content"]
    ]
    assert SUMMARY in design_prompts[1] and "evaluation episodes ended" in design_prompts[1]
    assert (Path(result["run_dir"]) / "llm" / "r00-analyzer-r00c00.json").is_file()
