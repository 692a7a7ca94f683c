"""A sandboxed program reads the installed packages, never the checkout around them.

With a `.pth` editable install (setuptools' `editable_mode=compat`, `setup.py develop`) the
checkout itself is on every interpreter's path. The sandbox used to grant it whole, and with it a
`.env` beside the package, the run store's reply cache, `state.sqlite` and other runs' reward
code. Python only needs to list that directory to import the package from it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import rewardsmith
from rewardsmith.sandbox import process_isolation
from rewardsmith.sandbox.types import Limits, Sandbox

PACKAGE = Path(rewardsmith.__file__).resolve().parent
CANARY = "sk-canary-checkout-0d9e"
PEEK = """\
import json, os, sys
seen = {}
for path in sys.argv[1:]:
    try:
        if os.path.isdir(path):
            seen[path] = "listed: " + ",".join(sorted(os.listdir(path)))
        else:
            with open(path) as handle:
                seen[path] = "read: " + handle.read()
    except OSError as exc:
        seen[path] = "denied: " + type(exc).__name__
print("PEEK " + json.dumps(seen))
"""


@pytest.fixture
def compat_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The package imported from a checkout that a `.pth` line puts on the path, with a `.env`
    and a run store planted beside it."""
    checkout = tmp_path / "checkout"
    shutil.copytree(PACKAGE, checkout / "rewardsmith", ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / ".env").write_text(f"OPENAI_API_KEY={CANARY}\n")
    (checkout / "runs" / "other").mkdir(parents=True)
    (checkout / "runs" / "other" / "state.sqlite").write_text(CANARY)
    monkeypatch.setattr(rewardsmith, "__file__", str(checkout / "rewardsmith" / "__init__.py"))
    monkeypatch.setattr(process_isolation, "_pth_paths", lambda: {checkout})
    return checkout


def test_interpreter_paths_never_grant_the_checkout(compat_checkout: Path) -> None:
    granted = process_isolation.interpreter_paths()
    assert compat_checkout / "rewardsmith" in granted
    assert not any(compat_checkout.is_relative_to(p) for p in granted), granted
    assert process_isolation.listable_paths() == [compat_checkout]


def test_a_planted_env_beside_an_editable_checkout_stays_unread(
    sandbox: Sandbox, compat_checkout: Path, tmp_path: Path
) -> None:
    program, job = tmp_path / "program", tmp_path / "job"
    program.mkdir()
    job.mkdir()
    (program / "peek.py").write_text(PEEK)
    targets = [
        compat_checkout / ".env",
        compat_checkout / "runs" / "other" / "state.sqlite",
        compat_checkout / "runs",
        compat_checkout,
        compat_checkout / "rewardsmith" / "__init__.py",
    ]
    run = sandbox.run(
        "cProfile",
        [str(program / "peek.py"), *map(str, targets)],
        [job],
        Limits(wall_s=60, memory_mb=1024),
        readable=[program, PACKAGE],  # the real package: the launcher and the worker import it
    )
    assert run.returncode == 0, run.output
    line = next(x for x in run.output.splitlines() if x.startswith("PEEK "))
    seen = json.loads(line.removeprefix("PEEK "))
    assert CANARY not in run.output, seen
    assert seen[str(targets[0])].startswith("denied"), seen
    assert seen[str(targets[1])].startswith("denied"), seen
    assert ".env" not in seen[str(compat_checkout)], seen
    assert seen[str(targets[4])].startswith("read"), seen  # the package itself is readable
