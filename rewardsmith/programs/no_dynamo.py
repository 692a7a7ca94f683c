"""Imported first by the programs that build an SB3 learner (the training worker, the evaluator's
fallback): torch's optimizers without TorchDynamo's import.

torch's optimizers import TorchDynamo, the tracer behind `torch.compile`, on their first call, only
to tell it not to trace them (`torch._disable_dynamo`, `torch._dynamo.graph_break()` in every
`step`). That import takes about 2 s of every training program on 2 cores
(benchmarks/optimizer_start.py), and these programs never compile. So until something asks for
more, `torch._dynamo` is a stand-in holding those two entry points as they act outside a compiled
graph: `disable(fn)` is `fn`, `graph_break()` does nothing. Anything else asked of it (an
attribute, a submodule) loads the real module in its place first, so a torch that needs more
loses only the time saved, never a training.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from typing import Any

import torch

NAME = "torch._dynamo"


def _disable(fn: Callable[..., Any] | None = None, *_: Any, **__: Any) -> Any:
    """`torch._dynamo.disable` where nothing is ever compiled: the function itself."""
    return fn if fn is not None else (lambda inner: inner)


def _graph_break(*_: Any, **__: Any) -> None:
    """`torch._dynamo.graph_break` outside a compiled graph: nothing to break."""


class StandIn(types.ModuleType):
    """`torch._dynamo` until anything beyond `disable` and `graph_break` is asked of it."""

    def __getattr__(self, name: str) -> Any:  # only for what the stand-in lacks
        return getattr(load_real(), name)


def load_real() -> types.ModuleType:
    """Put the real `torch._dynamo` where the stand-in was, and return it."""
    if isinstance(sys.modules.get(NAME), StandIn):
        del sys.modules[NAME]
        if isinstance(getattr(torch, "_dynamo", None), StandIn):
            delattr(torch, "_dynamo")
    return importlib.import_module(NAME)


def install() -> None:
    """Stand in for `torch._dynamo` unless the real one is already loaded."""
    if NAME in sys.modules:
        return
    stand_in = StandIn(NAME, __doc__)
    vars(stand_in).update(disable=_disable, graph_break=_graph_break)
    sys.modules[NAME] = stand_in
    torch._dynamo = stand_in  # `import torch._dynamo` then reads it


install()
