"""Code health checks the project's issue asks for, each run the way a developer would run it.

Every tool reads its settings from pyproject.toml, so a test here runs it with no arguments from the
repository root, and a failure prints what the tool reported.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m <args>` from the repository root, with its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_vulture_finds_no_dead_code() -> None:
    """Vulture at 60% confidence, with `vulture_whitelist.py` for names used where it cannot see
    (`[tool.vulture]` in pyproject.toml), reports nothing."""
    result = run_tool("vulture")
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0 and not output, f"vulture (exit {result.returncode}):\n{output}"


def test_no_function_of_the_package_is_harder_to_change_than_grade_c() -> None:
    """radon's cyclomatic complexity grades: D and worse (over 20 paths) are where a change
    breaks something unseen, so the package has none."""
    result = run_tool("radon", "cc", "--min", "D", "--show-complexity", "rewardsmith")
    assert result.returncode == 0, result.stderr
    assert not result.stdout.strip(), f"radon grades worse than C:\n{result.stdout}"


def test_every_public_class_and_function_has_a_docstring() -> None:
    """ruff's pydocstyle rules D101-D103 and D106 (selected in pyproject.toml) over the package:
    what a caller must know is written where it is defined; an `@override` inherits it."""
    result = run_tool(
        "ruff", "check", "--select", "D101,D102,D103,D106", "rewardsmith", "benchmarks"
    )
    assert result.returncode == 0, f"undocumented:\n{result.stdout}{result.stderr}"


def test_the_import_contracts_hold() -> None:
    """import-linter's contracts (`[tool.importlinter]` in pyproject.toml): the run store and the
    sandbox independent, the sandboxed programs free of the loop, store and CLI, and no module of
    the loop loading reward code itself."""
    result = subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"broken import contracts:\n{result.stdout}{result.stderr}"
