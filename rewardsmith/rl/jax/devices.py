"""What JAX sees on this machine, for `rewardsmith doctor`: asked of a separate Python process.

The orchestrator never imports JAX itself (it would take GPU memory the workers need, and the
core install has no JAX); a short trusted subprocess reports the version, the default backend and
the devices.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.util import find_spec
from typing import Any

from rewardsmith.rl.jax import INSTALL_HINT

_PROBE = (
    "import json, os\n"
    "os.environ.setdefault('XLA_PYTHON_CLIENT_PREALLOCATE', 'false')\n"
    "import jax\n"
    "print(json.dumps({'version': jax.__version__, 'backend': jax.default_backend(),"
    " 'devices': [f'{d.platform}:{d.id} {d.device_kind}' for d in jax.devices()]}))\n"
)


def jax_devices(timeout_s: float = 120.0) -> dict[str, Any]:
    """`{"installed": bool, "version", "backend", "devices": [...]}` or the reason it failed."""
    if find_spec("jax") is None:
        return {"installed": False, "error": f"JAX is not installed; {INSTALL_HINT}"}
    try:
        probe = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"installed": True, "error": f"importing JAX took over {timeout_s:.0f} s"}
    lines = probe.stdout.strip().splitlines()
    if probe.returncode != 0 or not lines:
        tail = probe.stderr.strip().splitlines()[-1:] or ["no output"]
        return {"installed": True, "error": f"JAX failed to start: {tail[0][:300]}"}
    try:
        found = json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"installed": True, "error": "JAX's device list could not be read"}
    return {"installed": True, **found}
