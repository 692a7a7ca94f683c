"""How to install an optional extra, from wherever this rewardsmith runs.

The README installs RewardSmith from its checkout (`pip install -e .`), so an error that says
`pip install 'rewardsmith[jax]'` would send pip to an index for whatever it holds under that
name. The line names this checkout instead, and the package only where it came from a wheel.
"""

from __future__ import annotations

import shlex
from pathlib import Path


def pip_install(extra: str) -> str:
    """The pip command that adds `extra` to this installation."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / "rewardsmith" / "__init__.py").is_file():
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    return f"pip install {shlex.quote(f'rewardsmith[{extra}]')}"
