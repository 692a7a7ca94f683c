"""`--confirm-best`: a would-be new best trains on a second seed, and selection compares the mean."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rewardsmith.eureka_loop import trainer
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.selection import CONFIRM_SEED_OFFSET, _fitness, select
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.candidate import CandidateFiles, CandidateKey
from tests.eureka_loop.select_run import SelectRun


class _Run(SelectRun):
    def candidate(self, key: CandidateKey) -> CandidateFiles:
        files = super().candidate(key)
        files.write("reward.py", "def compute_reward(s, a, n):\n    return n.x, {}\n")
        return files


def _select(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second: dict[str, Any], state: dict
) -> tuple[dict[str, Any], list[tuple[int, Path]], list[str]]:
    """The select node with the confirming training replaced by a fixed outcome, so the test
    decides what the second seed shows (the real training is covered below)."""
    calls: list[tuple[int, Path]] = []

    def fake_train_in(ctx: Any, folder: Any, key: CandidateKey, src: Any, seed: int) -> dict:
        calls.append((seed, folder.path))
        return second

    monkeypatch.setattr(trainer, "train_in", fake_train_in)
    messages: list[str] = []
    ctx = SimpleNamespace(
        run=_Run(state["candidates"] + ([state["best"]] if state.get("best") else []), tmp_path),
        reporter=SimpleNamespace(message=messages.append, best=lambda summary: None),
        config=SimpleNamespace(
            fitness_target=None,
            round_retries=2,
            rounds=3,
            confirm_best=True,
            seed=7,
            videos="none",
            judge="none",
            fitness="task",
        ),
        budget=None,
    )
    return select(state, SimpleNamespace(context=ctx)), calls, messages  # type: ignore[arg-type]


def _trained(round_: int, idx: int, fitness: float, **extra: Any) -> dict[str, Any]:
    return {"round": round_, "idx": idx, "fitness": fitness, "status": "trained", **extra}


def test_a_lucky_seed_does_not_take_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    incumbent = _trained(0, 0, 0.80, confirm_fitness=0.78)
    lucky = _trained(1, 2, 0.90)
    state = {"round": 1, "candidates": [lucky], "best": incumbent}
    update, calls, messages = _select(tmp_path, monkeypatch, {"ok": True, "fitness": 0.60}, state)
    assert update["best"] is incumbent  # (0.90 + 0.60) / 2 = 0.75 < 0.79
    assert calls == [(7 + 1000 + 2 + CONFIRM_SEED_OFFSET, tmp_path / "round_01/cand_02/confirm")]
    entry = update["history"][0]
    assert entry["round_best"] == "r01c02" and entry["round_best_confirm_fitness"] == 0.60
    assert entry["best"] == "r00c00" and entry["best_fitness"] == pytest.approx(0.79)
    assert any("compared as their mean 0.75" in m for m in messages)


def test_a_confirmed_win_takes_over_with_the_mean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    incumbent = _trained(0, 0, 0.80, confirm_fitness=0.78)
    better = _trained(1, 0, 0.90)
    state = {"round": 1, "candidates": [better], "best": incumbent}
    update, _, _ = _select(tmp_path, monkeypatch, {"ok": True, "fitness": 0.88}, state)
    assert update["best"]["idx"] == 0 and update["best"]["round"] == 1
    assert update["best"]["confirm_fitness"] == 0.88
    assert update["history"][0]["best_fitness"] == pytest.approx(0.89)


def test_a_failed_confirmation_counts_as_no_fitness(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    incumbent = _trained(0, 0, 0.80, confirm_fitness=0.78)
    state = {"round": 1, "candidates": [_trained(1, 0, 0.95)], "best": incumbent}
    failed = {"ok": False, "error": {"category": "timeout", "message": "over the wall limit"}}
    update, _, messages = _select(tmp_path, monkeypatch, failed, state)
    assert update["best"] is incumbent
    assert any("confirming training failed (over the wall limit)" in m for m in messages)
    assert _fitness({"fitness": 0.95, "confirm_fitness": None}) == float("-inf")


def test_the_incumbent_is_not_trained_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keeping the best (no candidate of the round beats it) costs no confirming training."""
    incumbent = _trained(0, 0, 0.80, confirm_fitness=0.78)
    state = {"round": 1, "candidates": [_trained(1, 0, 0.50)], "best": incumbent}
    update, calls, _ = _select(tmp_path, monkeypatch, {"ok": True, "fitness": 1.0}, state)
    assert update["best"] is incumbent and calls == []


@pytest.mark.slow
def test_every_best_of_a_real_run_was_trained_on_two_seeds(tmp_path: Path) -> None:
    config = LoopConfig(
        task_id="cartpole",
        rounds=2,
        samples=2,
        steps=2048,
        parallel=2,
        evaluate=False,
        preference_check=False,
        sandbox="process",
        confirm_best=True,
    )
    result = start_run(config, tmp_path)
    run_dir = Path(result["run_dir"])
    confirmed = sorted(
        p.parents[1].name for p in run_dir.glob("round_*/cand_*/confirm/outcome.json")
    )
    bests = {
        json.loads(p.read_text())["round_best"] for p in run_dir.glob("round_*/summary_a0.json")
    }
    assert confirmed and len(confirmed) <= len(bests)
    best = CandidateFiles(run_dir, CandidateKey.parse(result["best_candidate"]))
    first, second = best.outcome(), best.confirmation().outcome()
    assert first is not None and second is not None
    assert second["steps"] == first["steps"] == 2048
    summary = json.loads((run_dir / "run.json").read_text())["summary"]
    mean = (first["fitness"] + second["fitness"]) / 2
    assert summary["best_fitness"] == pytest.approx(mean) == result["best_fitness"]


def test_a_resumed_select_reuses_the_confirming_training(tmp_path: Path) -> None:
    """After a kill between the confirming training and the select node's checkpoint, the
    resumed node reads `confirm/outcome.json` instead of training again."""
    from rewardsmith.eureka_loop.selection import _confirm

    ctx = SimpleNamespace(
        run=_Run([], tmp_path),
        reporter=SimpleNamespace(message=lambda text: None),
        config=SimpleNamespace(seed=0, backend="sb3"),
    )
    folder = ctx.run.candidate(CandidateKey(1, 0)).confirmation()
    folder.write_outcome({"ok": True, "fitness": 0.5, "steps": 2048, "backend": "sb3"})
    confirmed = _confirm(ctx, _trained(1, 0, 0.9))  # type: ignore[arg-type]
    assert confirmed["confirm_fitness"] == 0.5 and _fitness(confirmed) == pytest.approx(0.7)
    assert not folder.job_dir.exists()  # nothing was trained
