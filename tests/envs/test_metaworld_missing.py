"""Without Meta-World (the default install: it pins mujoco 3.3.0 and lives in an environment of
its own), its tasks are left out of `rewardsmith tasks` and naming one says what to install."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from rewardsmith.cli import app
from rewardsmith.envs import list_tasks, load_task
from rewardsmith.envs.registry import unavailable_tasks
from rewardsmith.envs.suites import METAWORLD, SuiteMissingError

runner = CliRunner()


def test_a_missing_metaworld_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where Meta-World is installed, it is made to look absent."""
    installed = type(METAWORLD).installed
    monkeypatch.setattr(
        type(METAWORLD), "installed", lambda self: self is not METAWORLD and installed(self)
    )
    assert not any(task.startswith("metaworld-") for task in list_tasks())
    hints = [hint for hint, ids in unavailable_tasks().items() if "metaworld-reach" in ids]
    assert hints and "rewardsmith[metaworld] in its own environment" in hints[0]
    with pytest.raises(SuiteMissingError, match=r"rewardsmith\[metaworld\].*mujoco 3\.3\.0"):
        load_task("metaworld-button-press")
    result = runner.invoke(app, ["tasks", "show", "metaworld-reach"], env={"COLUMNS": "300"})
    assert result.exit_code == 1 and "rewardsmith[metaworld]" in result.output
    assert "Traceback" not in result.output
