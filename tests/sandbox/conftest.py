"""The sandbox checks' task and recorded states (the `sandbox` fixture is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.adapter import TaskAdapter
from rewardsmith.jobs.smoke import record_states


@pytest.fixture(scope="session")
def cartpole() -> TaskAdapter:
    """The task the sandbox checks train and smoke-test on."""
    return load_task("cartpole")


@pytest.fixture(scope="session")
def states(cartpole: TaskAdapter, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Recorded random-policy transitions (no reward code): the smoke test's states, and a bank
    of 4 episodes to score."""
    return record_states(cartpole, tmp_path_factory.mktemp("states") / "states.npz", episodes=4)
