"""A module put in place of one not imported yet, for the sandboxed programs' start-up.

Some libraries import, at their own import, a module the programs never use (TorchDynamo for
torch's optimizers, plotting libraries for gymnax's Pong) and pay seconds for it in every
program. A stand-in takes that module's place in `sys.modules`, holding whatever it is given;
anything else asked of it (an attribute it lacks, a submodule) imports the real module in its
place first, so a library that does need more loses only the time saved.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any


class StandIn(types.ModuleType):
    """A module not imported yet: the first attribute it lacks imports the real one."""

    def __getattr__(self, name: str) -> Any:  # only for what the stand-in lacks
        return getattr(load_real(self.__name__), name)


def load_real(name: str) -> types.ModuleType:
    """Put the real module where its stand-in was, and return it."""
    if isinstance(sys.modules.get(name), StandIn):
        del sys.modules[name]
        parent, _, child = name.rpartition(".")
        if isinstance(getattr(sys.modules.get(parent), child, None), StandIn):
            delattr(sys.modules[parent], child)
    return importlib.import_module(name)


def install(name: str, doc: str | None = None, **attributes: Any) -> None:
    """Stand in for module `name`, holding `attributes`, unless the real one is already loaded;
    where its parent package is loaded, the stand-in is its attribute too, as a submodule is."""
    if name in sys.modules:
        return
    stand_in = StandIn(name, doc)
    vars(stand_in).update(attributes)
    sys.modules[name] = stand_in
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, stand_in)
