"""Without Meta-World (the default install: it pins mujoco 3.3.0 and lives in an environment of
its own), its tasks are left out of `rewardsmith tasks` and naming one says what to install."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith import extras
from rewardsmith.cli import app
from rewardsmith.envs import list_tasks, load_task
from rewardsmith.envs.registry import unavailable_tasks
from rewardsmith.envs.suites import METAWORLD, ROBOTICS, SuiteMissingError

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


def test_the_install_line_installs_this_checkout_not_a_package_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RewardSmith installs from its checkout (README: `pip install -e .`); a bare
    `pip install 'rewardsmith[metaworld]'` would fetch whatever an index holds under that name."""
    _, _, pip_args = METAWORLD.install_hint.partition("/bin/pip install ")
    editable, requirement = shlex.split(pip_args)
    checkout = Path(requirement.removesuffix("[metaworld]"))
    assert editable == "-e" and requirement.endswith("[metaworld]")
    assert 'name = "rewardsmith"' in (checkout / "pyproject.toml").read_text()
    assert (checkout / "rewardsmith" / "extras.py").samefile(extras.__file__)
    # Installed from a wheel (no checkout above the package), the line names the package.
    monkeypatch.setattr(extras, "__file__", str(tmp_path / "site" / "rewardsmith" / "extras.py"))
    assert ROBOTICS.install_hint.endswith("(pip install 'rewardsmith[robotics]')")
