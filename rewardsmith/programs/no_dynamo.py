"""Imported first by the programs that build an SB3 learner (the training worker, the evaluator's
fallback): torch's optimizers without TorchDynamo's import.

torch's optimizers import TorchDynamo, the tracer behind `torch.compile`, on their first call, only
to tell it not to trace them (`torch._disable_dynamo`, `torch._dynamo.graph_break()` in every
`step`). That import takes about 2 s of every training program on 2 cores
(benchmarks/optimizer_start.py), and these programs never compile. So until something asks for
more, `torch._dynamo` is a stand-in holding those two entry points as they act outside a compiled
graph: `disable(fn)` is `fn`, `graph_break()` does nothing. Anything else asked of it (an
attribute, a submodule) loads the real module in its place first (`rewardsmith/stand_in.py`), so
a torch that needs more loses only the time saved, never a training.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch  # noqa: F401  (the parent package: the stand-in becomes its `_dynamo`)

from rewardsmith.stand_in import install

NAME = "torch._dynamo"


def _disable(fn: Callable[..., Any] | None = None, *_: Any, **__: Any) -> Any:
    """`torch._dynamo.disable` where nothing is ever compiled: the function itself."""
    return fn if fn is not None else (lambda inner: inner)


def _graph_break(*_: Any, **__: Any) -> None:
    """`torch._dynamo.graph_break` outside a compiled graph: nothing to break."""


install(NAME, __doc__, disable=_disable, graph_break=_graph_break)
