"""CI (`.ci/run`) runs the README's test command as written, and every test that command leaves out.

The README's command deselects some markers by default (`addopts` in pyproject.toml: the MJX
compiles); a test left out there must not be left out of CI too.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The commands of the README's opening code block: setup-and-run, then setup-and-test."""
    text = (REPO_ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL)
    assert block is not None, "the README opens with a bash block of its two commands"
    return [line for line in block.group(1).splitlines() if line.strip()]


def ci_lines() -> list[str]:
    """`.ci/run`'s command lines, without comments."""
    lines = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def deselected_markers() -> list[str]:
    """The markers that `pytest` leaves out unless asked (`-m "not X"` in addopts)."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    args = shlex.split(config["tool"]["pytest"]["ini_options"]["addopts"])
    expressions = [args[i + 1] for i, arg in enumerate(args) if arg == "-m"]
    markers = []
    for expression in expressions:
        match = re.fullmatch(r"not (\w+)", expression)
        assert match, f"addopts' -m {expression!r} is not `not MARKER`: CI could not run the rest"
        markers.append(match.group(1))
    return markers


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    test_command = readme_commands()[1]
    assert "pytest" in test_command
    assert test_command in ci_lines()


def test_ci_runs_every_marker_the_readmes_command_leaves_out() -> None:
    markers = deselected_markers()
    assert markers == ["mjx"]  # the MJX compiles: docs/benchmarks.md
    for marker in markers:
        assert f".venv/bin/pytest -m {marker}" in ci_lines(), f"CI never runs `-m {marker}`"
