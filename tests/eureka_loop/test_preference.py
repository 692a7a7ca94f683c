"""The trajectory bank and the preference check: bad rewards are rejected before any training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import Episode
from rewardsmith.eureka_loop.bank import TrajectoryBank, keep_indices, seed_bank
from rewardsmith.eureka_loop.extract import extract_code
from rewardsmith.eureka_loop.preference_scoring import (
    Scores,
    agreement,
    assess,
    clear_pairs,
    tpe_share,
)
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.jobs.score import score_bank
from rewardsmith.runs.store import RunStore
from rewardsmith.sandbox.executor import ProcessSandbox
from tests.eureka_loop.rewards import GOOD_ALIVE, GOOD_UPRIGHT


def _reply(body: str) -> str:
    return (
        "```python\nimport numpy as np\n\n\ndef compute_reward(state, action, next_state):\n"
        + body
        + "```\n"
    )


# GOOD_UPRIGHT with the sign of its main term flipped: pays for the pole falling.
FLIPPED = _reply(
    "    upright = -(1.0 - np.abs(next_state.pole_angle) / 0.21)\n"
    "    centred = -0.1 * np.abs(next_state.cart_position)\n"
    "    return upright + centred, {'upright': upright, 'centred': centred}\n"
)
# Pays for pushing right, which has nothing to do with balancing the pole.
UNRELATED = _reply(
    "    push = (action == 1).astype(np.float64) - 0.5\n    return push, {'push_right': push}\n"
)


# --- the bank ----------------------------------------------------------------------------------


def test_keep_policy_keeps_the_spread_of_fitness() -> None:
    # 190 good episodes, then 10 bad ones: a cap of 50 must keep every bad one.
    fitness = np.array([500.0] * 100 + [450.0] * 90 + [10.0] * 10)
    kept = keep_indices(fitness, 50)
    assert len(kept) == 50
    assert set(range(190, 200)) <= set(kept.tolist())
    assert len(set(fitness[kept].tolist())) == 3
    assert len(keep_indices(fitness[:30], 50)) == 30


def _episode(length: int) -> Episode:
    return Episode(
        states={"x": np.arange(length + 1, dtype=np.float64)},
        actions=np.zeros(length, dtype=np.int64),
        env_rewards=np.ones(length),
        terminated=True,
        truncated=False,
    )


def test_bank_is_capped_and_adds_each_source_once(tmp_path: Path) -> None:
    bank = TrajectoryBank(tmp_path / "bank", cap=20)
    assert bank.add([(_episode(n), float(n), None) for n in range(1, 16)], "seed") == 15
    assert bank.add([(_episode(n), float(n), None) for n in range(50, 60)], "r00c00") == 20
    assert bank.add([(_episode(3), 3.0, None)], "r00c00") == 20  # a resume re-adds nothing
    info = bank.info()
    assert info.size == 20 and info.version == 2
    fitness = sorted(f for _, f, _ in bank.load())
    assert fitness[0] < 10 and fitness[-1] >= 55  # both ends of the range survive the cap
    assert set(info.sources) == {"seed", "r00c00"}
    data = np.load(bank.path)
    assert data["state/x"].dtype == np.float32


def test_seed_bank_has_a_spread_of_fitness(tmp_path: Path) -> None:
    adapter = load_task("cartpole")
    bank = TrajectoryBank(tmp_path / "bank")
    info = seed_bank(adapter, bank, seed=0)
    fitness = np.array([f for _, f, _ in bank.load()])
    assert info.size >= 30
    assert fitness.max() > 5 * fitness.min()  # random linear policies balance far longer than noise
    assert any(s.startswith("seed:linear") for s in info.sources)
    assert seed_bank(adapter, bank, seed=0).version == info.version  # an existing bank is kept


# --- the decision --------------------------------------------------------------------------------


def _scores(values: np.ndarray) -> Scores:
    return Scores(discounted=values, returns=values, per_step=values / 10)


def test_agreement_counts_only_clearly_ordered_pairs() -> None:
    fitness = np.array([1.0, 1.01, 10.0, 20.0])
    better, worse, margin = clear_pairs(fitness)
    assert margin > 0.02
    assert (1, 0) not in set(
        zip(better.tolist(), worse.tolist(), strict=True)
    )  # 1.01 vs 1.0: noise
    assert agreement(fitness, better, worse) == 1.0
    assert agreement(-fitness, better, worse) == 0.0
    assert agreement(np.ones(4), better, worse) == 0.5  # ties count half


def test_assess_passes_the_order_of_fitness_and_rejects_its_reverse() -> None:
    rng = np.random.default_rng(0)
    fitness = rng.uniform(0, 100, 40)
    success = np.full(40, -1)
    good = assess(fitness, success, _scores(fitness + rng.normal(0, 5, 40)), 0.8)
    assert good.passed and good.discriminating and good.score is not None and good.score > 0.9
    bad = assess(fitness, success, _scores(-fitness), 0.8)
    assert not bad.passed and bad.score == 0.0
    assert len(bad.mis_ranked) == 3
    b, w = bad.mis_ranked[0]
    assert fitness[b] > fitness[w]


def test_a_reward_blind_to_fitness_is_rejected_with_tied_pairs_as_examples() -> None:
    fitness = np.linspace(0, 100, 30)
    result = assess(fitness, np.full(30, -1), _scores(np.ones(30)), 0.8)
    assert not result.passed and result.score == 0.5
    assert result.mis_ranked  # tied pairs show what the reward cannot tell apart


def test_a_bank_without_spread_passes_everything_and_says_so() -> None:
    fitness = np.full(30, -500.0)
    fitness[0] = -480.0  # one lucky episode: too few clearly ordered pairs to judge by
    result = assess(fitness, np.full(30, -1), _scores(-fitness), 0.8)
    assert result.passed and not result.discriminating
    assert "cannot discriminate" in result.reason


def test_the_bar_drops_to_what_the_environment_reward_achieves() -> None:
    rng = np.random.default_rng(1)
    fitness = rng.uniform(0, 1, 40)
    noise = rng.uniform(0, 1, 40)
    # The task's own reward barely follows fitness here (as on MountainCar): so the bar drops.
    result = assess(
        fitness, np.full(40, -1), _scores(noise), 0.8, reference=_scores(0.3 * fitness + noise)
    )
    assert result.reference["score"] is not None and result.threshold < 0.8
    assert result.threshold == pytest.approx(min(0.8, result.reference["score"] - 0.15))
    assert "lowered from 80%" in result.reason


def test_tpe_ignores_near_misses_and_single_odd_failures() -> None:
    fitness = np.array([500.0] * 5 + [499.0] + [20.0] * 30)
    success = np.array([1] * 5 + [0] * 31)
    values = np.array([0.0] * 5 + [5.0] + [-1.0] * 29 + [0.0])  # the 499-step miss earns most
    margin = clear_pairs(fitness)[2]
    assert tpe_share(values, fitness, success, margin, 0.9) == 1.0
    assert tpe_share(values, fitness, success, margin) == 0.0  # CARD's max rule: one odd failure


# --- scoring in the sandbox -------------------------------------------------------------------


@pytest.fixture(scope="module")
def cartpole_bank(tmp_path_factory: pytest.TempPathFactory) -> TrajectoryBank:
    bank = TrajectoryBank(tmp_path_factory.mktemp("bank") / "bank")
    seed_bank(load_task("cartpole"), bank, seed=0)
    return bank


@pytest.mark.parametrize(
    ("reply", "passes"),
    [(GOOD_ALIVE, True), (GOOD_UPRIGHT, True), (FLIPPED, False), (UNRELATED, False)],
    ids=["human_plus_one_per_step", "upright", "flipped_sign", "unrelated"],
)
def test_scores_from_the_sandbox_separate_good_and_bad_rewards(
    cartpole_bank: TrajectoryBank, tmp_path: Path, reply: str, passes: bool
) -> None:
    scores = score_bank(
        extract_code(reply), tmp_path / "score", cartpole_bank.path, ProcessSandbox(), gamma=0.98
    )
    assert scores.ok, scores.error
    records = cartpole_bank.load()
    lengths = np.array([e.length for e, _, _ in records], dtype=np.float64)
    fitness = np.array([f for _, f, _ in records])
    if (
        reply is GOOD_ALIVE
    ):  # +1 per step: the return is the length, the discounted return its order
        assert np.allclose(scores.returns, lengths)
        assert np.allclose(scores.discounted, (1 - 0.98**lengths) / (1 - 0.98))
    reference = Scores.from_env_rewards(records, 0.98)
    result = assess(
        fitness, np.full(len(records), -1), Scores.from_bank_scores(scores), 0.8, reference
    )
    assert result.passed is passes, result.reason


def test_a_reward_that_fails_on_bank_states_is_a_named_error(
    cartpole_bank: TrajectoryBank, tmp_path: Path
) -> None:
    source = extract_code(_reply("    return np.log(next_state.cart_position - 5.0), {}\n"))
    scores = score_bank(source, tmp_path / "score", cartpole_bank.path, ProcessSandbox())
    assert not scores.ok and scores.error is not None
    assert scores.error.category.value == "nonfinite_reward"


# --- the loop ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_flipped_and_unrelated_rewards_are_rejected_without_training(
    tmp_path: Path, scripted_llm
) -> None:
    # Round 0: a flipped, an unrelated and a good reward; round 1: three bad ones.
    server = scripted_llm([FLIPPED, UNRELATED, GOOD_UPRIGHT, UNRELATED, FLIPPED, FLIPPED])
    config = LoopConfig(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=2,
        samples=3,
        steps=2_000,
        parallel=2,
        evaluate=False,
        sandbox="process",
        round_retries=0,
    )
    result = start_run(config, tmp_path)
    run_dir = Path(result["run_dir"])
    candidates = RunStore(tmp_path).open_run(run_dir).candidates()
    by_status: dict[str, list[dict]] = {}
    for c in candidates:
        by_status.setdefault(c["status"], []).append(c)
    assert len(by_status["trained"]) == 1
    assert len(by_status["rejected"]) == 5
    assert {c["category"] for c in by_status["rejected"]} == {"preference_rejected"}
    for c in candidates:
        cand_dir = run_dir / f"round_{c['round']:02d}" / f"cand_{c['idx']:02d}"
        record = json.loads((cand_dir / "preference.json").read_text())
        assert (cand_dir / "job").exists() == (c["status"] == "trained")  # no job dir: no training
        assert record["steps_saved"] == (0 if c["status"] == "trained" else 2_000)
        assert record["score"] is not None and record["discriminating"]
        if c["status"] == "rejected":
            assert (cand_dir / "preference_feedback.md").is_file()
            assert "steps saved" in c["message"]
    good = by_status["trained"][0]
    assert "upright" in (run_dir / f"round_00/cand_{good['idx']:02d}/reward.py").read_text()
    assert result["preference"]["steps_saved"] == 5 * 2_000
    assert result["preference"]["checks"] == 6 and result["preference"]["rejected"] == 5
    info = json.loads((run_dir / "run.json").read_text())
    assert info["summary"]["preference"]["steps_saved"] == 10_000
    # The bank grew with the trained policy's evaluation episodes.
    assert "r00c0" in " ".join(json.loads((run_dir / "bank" / "bank.json").read_text())["added"])
    # Round 1's prompt carried the mis-ranked pairs of round 0's rejections.
    prompt = server.requests[3]["messages"][-1]["content"]
    assert "preference_rejected" in prompt and "ranks the wrong way round" in prompt
    assert "Better:" in prompt and "Worse:" in prompt
