"""The evolution loop end to end: offline designer, scripted LLM through litellm, budgets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.store import RunStore
from tests.eureka_loop.rewards import GOOD_ALIVE, GOOD_UPRIGHT, NO_CODE, SYNTAX_ERROR

pytestmark = pytest.mark.slow


def _candidates(run_dir: Path) -> dict[str, dict]:
    run = RunStore(run_dir.parent).open_run(run_dir)
    return {f"r{c['round']:02d}c{c['idx']:02d}": c for c in run.candidates()}


def test_offline_designer_runs_and_evaluates(tmp_path: Path) -> None:
    config = LoopConfig(
        task_id="cartpole",
        rounds=2,
        samples=2,
        steps=2_000,
        parallel=2,
        eval_seeds=1,
        sandbox="process",
    )
    result = start_run(config, tmp_path)
    assert result["designer"].startswith("offline designer")
    assert result["llm_calls"] == 0
    assert [h["round"] for h in result["history"]] == [0, 1]
    assert result["best_fitness"] is not None and result["best_fitness"] > 0
    assert Path(result["best_reward_path"]).is_file()
    assert result["human_fitness"] is not None and result["sparse_fitness"] is not None
    assert (Path(result["run_dir"]) / "evaluation" / "evaluation.json").is_file()
    # Round 0 always holds the unchanged human reward as candidate 0.
    first = (Path(result["run_dir"]) / "round_00" / "cand_00" / "response.md").read_text()
    assert "human reward, unchanged" in first
    info = json.loads((Path(result["run_dir"]) / "run.json").read_text())
    assert info["status"] == "finished" and info["model"] == "offline designer"


def test_scripted_llm_run_rejects_broken_code_and_selects_by_fitness(
    tmp_path: Path, scripted_llm
) -> None:
    server = scripted_llm(
        [
            {"status": 429},
            GOOD_UPRIGHT,
            {"status": 500},
            SYNTAX_ERROR,
            NO_CODE,
            {"delay_s": 0.5, "text": GOOD_ALIVE},
        ],
        default_reply=GOOD_ALIVE,
    )
    config = LoopConfig(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=1,
        samples=4,
        steps=3_000,
        parallel=2,
        evaluate=False,
        sandbox="process",
    )
    result = start_run(config, tmp_path)
    run_dir = Path(result["run_dir"])
    candidates = _candidates(run_dir)
    statuses = sorted((c["status"], c["category"]) for c in candidates.values())
    assert ("rejected", "extract_error") in statuses
    assert ("rejected", "syntax_error") in statuses
    assert sum(status == "trained" for status, _ in statuses) == 2
    for key, c in candidates.items():
        job_dir = run_dir / "round_00" / f"cand_{c['idx']:02d}" / "job"
        assert job_dir.exists() == (c["status"] == "trained"), key  # rejected code is never trained
    trained = [c for c in candidates.values() if c["status"] == "trained"]
    best = max(trained, key=lambda c: c["fitness"])
    assert result["best_fitness"] == best["fitness"]
    assert result["llm_calls"] == 4 and result["tokens"] > 0
    # Every prompt carried the goal, the fields and the contract.
    prompt = server.requests[-1]["messages"][-1]["content"]
    assert "pole_angle" in prompt and "Balance a pole" in prompt


def test_token_budget_stops_the_run_cleanly(tmp_path: Path, scripted_llm) -> None:
    server = scripted_llm(default_reply=GOOD_ALIVE)
    config = LoopConfig(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=5,
        samples=1,
        steps=1_000,
        parallel=1,
        evaluate=False,
        max_tokens=1,
        sandbox="process",
    )
    result = start_run(config, tmp_path)
    assert result["stop_reason"].startswith("budget")
    assert len(result["history"]) == 1  # the first round ran, then the budget stopped the loop
    assert server.request_count == 1
    assert Path(result["best_reward_path"]).is_file()
    info = json.loads((Path(result["run_dir"]) / "run.json").read_text())
    assert info["status"] == "finished"
