"""A sandboxed program reads the installed packages, never the checkout around them.

With a `.pth` editable install (setuptools' `editable_mode=compat`, `setup.py develop`) the
checkout itself is on every interpreter's path. The sandbox used to grant it whole, and with it a
`.env` beside the package, the run store's reply cache, `state.sqlite` and other runs' reward
code. Python only needs to list that directory to import the package from it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import venv as venv_module
import zipfile
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


# The same attack through a real `editable_mode=compat` install: setuptools' own `.pth` line, not
# a patched `_pth_paths`. The orchestrator runs in a fresh virtualenv whose only rewardsmith is
# the checkout copy; the dependencies come from this one through a second `.pth` line.
ORCHESTRATE = """\
import json, sys
from pathlib import Path
import rewardsmith
from rewardsmith.sandbox import process_isolation
from rewardsmith.sandbox.executor import ProcessSandbox
from rewardsmith.sandbox.types import Limits

program, job, *targets = sys.argv[2:]
sandbox = ProcessSandbox(use_bwrap=None if sys.argv[1] == "process" else False)
run = sandbox.run(
    "cProfile", [str(Path(program) / "peek.py"), *targets], [Path(job)],
    Limits(wall_s=60, memory_mb=1024), readable=[Path(program)],
)
print("RESULT " + json.dumps({
    "package": rewardsmith.__file__,
    "granted": [str(p) for p in process_isolation.interpreter_paths()],
    "listable": [str(p) for p in process_isolation.listable_paths()],
    "returncode": run.returncode,
    "output": run.output,
}))
"""


def compat_install(checkout: Path, venv: Path) -> Path:
    """`checkout` installed into a new `venv` by setuptools' `editable_mode=compat` wheel;
    returns the venv's interpreter."""
    wheels = checkout.parent / "wheels"
    wheels.mkdir()
    build = (
        "import sys, setuptools.build_meta as backend\n"
        "print(backend.build_editable(sys.argv[1], config_settings={'editable_mode': 'compat'}))"
    )
    subprocess.run(
        [sys.executable, "-c", build, str(wheels)], cwd=checkout, check=True, capture_output=True
    )
    venv_module.create(venv, with_pip=False)
    python = venv / "bin" / "python"
    site_dir = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    [wheel] = wheels.glob("*.whl")
    zipfile.ZipFile(wheel).extractall(site_dir)
    [pth] = site_dir.glob("__editable__*.pth")
    assert pth.read_text().strip() == str(checkout), "not the path `.pth` this test is about"
    (site_dir / "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


@pytest.mark.parametrize("backend", ["process", "process-nobwrap"])
def test_a_real_compat_install_keeps_the_checkout_unread(tmp_path: Path, backend: str) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(PACKAGE, checkout / "rewardsmith", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PACKAGE.parent / name, checkout / name)
    (checkout / ".env").write_text(f"OPENAI_API_KEY={CANARY}\n")
    (checkout / "runs" / "other").mkdir(parents=True)
    (checkout / "runs" / "other" / "state.sqlite").write_text(CANARY)
    python = compat_install(checkout, tmp_path / "venv")
    program, job = tmp_path / "program", tmp_path / "job"
    program.mkdir()
    job.mkdir()
    (program / "peek.py").write_text(PEEK)
    env_file, state = checkout / ".env", checkout / "runs" / "other" / "state.sqlite"
    targets = [env_file, state, checkout, checkout / "rewardsmith" / "__init__.py"]
    done = subprocess.run(
        [python, "-c", ORCHESTRATE, backend, str(program), str(job), *map(str, targets)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(line.removeprefix("RESULT "))
    if result["returncode"] != 0 and "refuse" in result["output"]:
        pytest.skip(f"{backend} cannot confine here: {result['output'][-300:]}")
    assert result["package"] == str(checkout / "rewardsmith" / "__init__.py")
    assert result["returncode"] == 0, result["output"]
    peek = next(x for x in result["output"].splitlines() if x.startswith("PEEK "))
    seen = json.loads(peek.removeprefix("PEEK "))
    assert CANARY not in result["output"], seen
    assert seen[str(env_file)].startswith("denied"), seen
    assert seen[str(state)].startswith("denied"), seen
    assert ".env" not in seen[str(checkout)] and "runs" not in seen[str(checkout)], seen
    assert seen[str(targets[3])].startswith("read"), seen  # the package itself is readable
    assert result["listable"] == [str(checkout)]  # what `doctor` reports as listed, not read
    assert not any(checkout.is_relative_to(p) for p in map(Path, result["granted"]))
