"""The evolution loop on the JAX backend: the critic's jax check, prompts, and a whole run."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

import pytest

from rewardsmith.eureka_loop.no_result import NothingTrainedError
from rewardsmith.eureka_loop.runner import start_run
from rewardsmith.eureka_loop.state import LoopConfig
from rewardsmith.runs.candidate import CandidateKey
from rewardsmith.runs.store import RunStore

pytestmark = pytest.mark.skipif(
    any(find_spec(name) is None for name in ("jax", "gymnax", "brax")),
    reason="the jax extra is not installed: pip install -e '.[jax]'",
)

# Runs under numpy (the smoke test passes it) but cannot trace: item assignment on line 6.
UNTRACEABLE = """```python
import numpy as np


def compute_reward(state, action, next_state):
    upright = np.cos(next_state.pole_angle)
    upright[np.abs(next_state.cart_position) > 2.0] = 0.0
    return upright, {"upright": upright}
```"""


@pytest.mark.slow
def test_the_critic_rejects_an_untraceable_reward_by_name(tmp_path: Path, scripted_llm) -> None:
    server = scripted_llm([UNTRACEABLE])
    config = LoopConfig(
        task_id="cartpole",
        model=server.model,
        api_base=server.base_url,
        rounds=1,
        samples=1,
        steps=2048,
        parallel=1,
        evaluate=False,
        sandbox="process",
        round_retries=0,
        backend="jax",
    )
    with pytest.raises(NothingTrainedError):
        start_run(config, tmp_path)
    [summary] = RunStore(tmp_path).list_runs()
    run = RunStore(tmp_path).open_run(summary.path)
    [candidate] = run.candidates()
    assert candidate["status"] == "rejected"
    assert candidate["category"] == "jax_incompatible"
    assert "line 6" in candidate["message"] and "np.where" in candidate["message"]
    critique = json.loads((run.candidate(CandidateKey(0, 0)).path / "critique.json").read_text())
    assert critique["line"] == 6
    assert not (
        run.candidate(CandidateKey(0, 0)).path / "job"
    ).exists()  # rejected before any training
    # The designer was told the code must trace.
    system = server.requests[0]["messages"][0]["content"]
    assert "jax_incompatible" in system and "np.where" in system and "Brax PPO" in system


@pytest.mark.slow
def test_run_cartpole_on_jax_with_the_offline_designer(tmp_path: Path) -> None:
    config = LoopConfig(
        task_id="cartpole",
        rounds=1,
        samples=1,
        steps=2048,
        parallel=1,
        evaluate=False,
        sandbox="process",
        backend="jax",
    )
    result = start_run(config, tmp_path)
    [summary] = RunStore(tmp_path).list_runs()
    run = RunStore(tmp_path).open_run(summary.path)
    assert run.info()["config"]["backend"] == "jax"
    outcome = json.loads((run.candidate(CandidateKey(0, 0)).path / "outcome.json").read_text())
    assert outcome["ok"] and outcome["backend"] == "jax", outcome["error"]
    assert outcome["fitness"] >= 8 and outcome["checkpoints"]
    assert (run.candidate(CandidateKey(0, 0)).path / "job" / "reward.jaxexport").exists()
    assert result
