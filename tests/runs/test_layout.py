"""`runs/layout.py` is the one module that spells a run directory's names.

The test reads every module of the package as source (string literals outside docstrings): a file
name of the run layout may appear only in `runs/layout.py`, or in `job_spec.py`, which names the
files inside a program's folder for the programs (they may not import the run store) and shares a
few names with the run (`reward.py`, `states.npz`, ...). A folder name of the layout may not be
joined onto a path (`path / "job"`) anywhere else, and no f-string builds a round file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import rewardsmith
from rewardsmith.runs import layout

PACKAGE = Path(rewardsmith.__file__).parent
OWNERS = {PACKAGE / "runs" / "layout.py", PACKAGE / "job_spec.py"}


def _layout_names() -> tuple[set[str], set[str]]:
    """The layout's file names (with a suffix) and its folder names."""
    values = [v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str)]
    values += list(layout.REWARD_COPIES.values())
    files = {v for v in values if "." in v}
    folders = {v for v in values if "." not in v} - {
        layout.ROUND_PROMPT,
        layout.ROUND_SUMMARY,
        layout.ROUND_ANALYSIS,
    }
    return files, folders


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the strings that stand alone as statements: docstrings (of modules, classes,
    functions and attributes), which may name files in prose."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def _spellings(path: Path, files: set[str], folders: set[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    rel = path.name if not path.is_relative_to(PACKAGE) else path.relative_to(PACKAGE.parent)
    stems = {layout.ROUND_PROMPT, layout.ROUND_SUMMARY, layout.ROUND_ANALYSIS}
    found = []
    for node in ast.walk(tree):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(text, str) and text in files and id(node) not in docs:
            found.append(f"{rel}:{node.lineno}: {text!r}")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            right = node.right
            if isinstance(right, ast.Constant) and right.value in folders:
                found.append(f"{rel}:{node.lineno}: / {right.value!r}")
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                piece = part.value if isinstance(part, ast.Constant) else None
                if isinstance(piece, str) and piece.endswith("_a") and piece[:-2] in stems:
                    found.append(f"{rel}:{node.lineno}: round file f-string {piece!r}")
    return found


def test_no_module_but_the_layout_spells_a_run_path() -> None:
    files, folders = _layout_names()
    assert {"outcome.json", "run.json", "worker.log", "states.npz"} <= files
    assert {"job", "eval", "smoke", "bank", "llm"} <= folders
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in OWNERS
        for hit in _spellings(path, files, folders)
    ]
    assert not found, "run paths spelled outside rewardsmith/runs/layout.py:\n" + "\n".join(found)


def test_the_check_sees_a_spelled_name(tmp_path: Path) -> None:
    """The grep is not vacuous: each kind of spelling it looks for is found."""
    planted = tmp_path / "planted.py"
    source = (
        'def f(d):\n    """outcome.json in a docstring is fine."""\n'
        '    return d / "job", "worker.log", f"summary_a{1}.json"\n'
    )
    planted.write_text(source)
    files, folders = _layout_names()
    hits = _spellings(planted, files, folders)
    assert len(hits) == 3, hits


def test_round_files_are_found_by_round_and_attempt(tmp_path: Path) -> None:
    (tmp_path / "round_02").mkdir()
    for name in ("summary_a0.json", "summary_a3.json", "prompt_a0.json", "summary_a.json"):
        (tmp_path / "round_02" / name).write_text("{}")
    found = layout.round_files(tmp_path, layout.ROUND_SUMMARY)
    assert set(found) == {(2, 0), (2, 3)}
    assert found[(2, 3)].name == layout.round_file(layout.ROUND_SUMMARY, 3) == "summary_a3.json"
