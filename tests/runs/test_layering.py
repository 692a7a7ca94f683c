"""The run store is a lower layer: the loop and the CLI build on it, never the other way round."""

from __future__ import annotations

import ast
from pathlib import Path

import rewardsmith.runs

UPPER_LAYERS = ("rewardsmith.eureka_loop", "rewardsmith.commands", "rewardsmith.cli")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_run_store_imports_nothing_of_the_loop_or_the_cli() -> None:
    package = Path(rewardsmith.runs.__file__).parent
    offending = {
        f"{path.name}: {name}"
        for path in package.glob("*.py")
        for name in _imports(path)
        if name.startswith(UPPER_LAYERS)
    }
    assert not offending
