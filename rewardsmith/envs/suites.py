"""Optional simulator suites (Gymnasium-Robotics, Meta-World): installed through extras, imported
only when one of their environments is made.

A suite registers its environments with Gymnasium when imported, so nothing here imports one
until an environment id needs it: `rewardsmith tasks` and every classic task stay as fast as
before, and a missing suite is one clear line ("install rewardsmith[robotics]"), never a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import sys
import threading
from dataclasses import dataclass

import gymnasium as gym

from rewardsmith.envs.registry import TaskNotFoundError
from rewardsmith.extras import pip_install


@dataclass(frozen=True)
class Suite:
    """One optional package of environments and the extra that installs it."""

    name: str  # what users read: "Gymnasium-Robotics"
    module: str  # what is imported: "gymnasium_robotics"
    extra: str  # `pip install -e '.[<extra>]'`
    own_environment: str = ""  # why it cannot join the default install, if it cannot

    @property
    def install_hint(self) -> str:
        """The one line that says how to get the suite."""
        package = f"rewardsmith[{self.extra}]"
        if not self.own_environment:
            return f"install {package} ({pip_install(self.extra)})"
        venv = f".venv-{self.extra}"
        return (
            f"install {package} in its own environment ({self.own_environment}): "
            f"python -m venv {venv} && {venv}/bin/{pip_install(self.extra)}"
        )

    def installed(self) -> bool:
        """Whether the suite can be imported, found without importing it."""
        return importlib.util.find_spec(self.module) is not None


ROBOTICS = Suite("Gymnasium-Robotics", "gymnasium_robotics", "robotics")
METAWORLD = Suite(
    "Meta-World",
    "metaworld",
    "metaworld",
    own_environment="it pins mujoco 3.3.0",
)
SUITES = {suite.extra: suite for suite in (ROBOTICS, METAWORLD)}


class SuiteMissingError(TaskNotFoundError):
    """A task or environment whose suite is not installed; the message says what to install."""


_IMPORT_LOCK = threading.Lock()
_LOADED: set[str] = set()  # suites imported, and fixed, by `load_suite`


def load_suite(suite: Suite) -> None:
    """Import the suite (registering its environments), with the fixes this install needs."""
    if suite.module in _LOADED:
        return
    if not suite.installed():
        raise SuiteMissingError(f"{suite.name} is not installed: {suite.install_hint}")
    with _IMPORT_LOCK:
        _load(suite)
        _LOADED.add(suite.module)


def _load(suite: Suite) -> None:
    if suite is ROBOTICS:
        # It prints a notice about its Adroit environments (which no task here uses) to
        # stderr on import; the notice would read as a problem with the task being run.
        with contextlib.redirect_stderr(io.StringIO()):
            importlib.import_module(suite.module)
        from rewardsmith.envs.robotics_compat import patch_joint_helpers

        patch_joint_helpers()
    else:
        importlib.import_module(suite.module)
        from rewardsmith.envs.metaworld_compat import share_goal_draws

        share_goal_draws()


def ensure_registered(env_id: str) -> None:
    """Make sure Gymnasium can build `env_id`, importing the installed suite that provides it.

    An id with a module prefix (`gymnasium_robotics:FetchReach-v4`) names its suite; a bare id
    not yet registered is looked for in every installed suite. An id no suite provides is left
    for `gym.make` to refuse as usual.
    """
    for suite in SUITES.values():
        if suite.module in sys.modules:  # imported by someone else: it still needs its fixes
            load_suite(suite)
    module, _, bare_id = env_id.rpartition(":")
    if module:
        for suite in SUITES.values():
            if module.split(".")[0] == suite.module:
                load_suite(suite)
        return
    if bare_id in gym.registry:
        return
    for suite in SUITES.values():
        if suite.installed():
            load_suite(suite)
            if bare_id in gym.registry:
                return


def missing_suites_hint() -> str:
    """For an unknown environment id: the suites that could provide it but are not installed."""
    missing = [suite for suite in SUITES.values() if not suite.installed()]
    if not missing:
        return ""
    return " " + "; ".join(f"for {s.name} environments, {s.install_hint}" for s in missing) + "."
