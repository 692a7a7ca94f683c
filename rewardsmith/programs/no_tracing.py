"""Imported before torch by the programs that build an SB3 learner: torch without the kernels
its tracers need, which eager training never uses.

`import torch` imports `torch._meta_registrations`: Python kernels for tensors on the "meta"
device (shapes without data), which `torch.compile`, `torch.export` and the other tracers run
models on, and with them PrimTorch's references and decompositions. About 0.27 CPU-s of every
training program's start on 2 cores (benchmarks/optimizer_start.py --stand-in no_tracing), paid
per candidate; a policy trained on CPU or CUDA tensors dispatches to none of them. A stand-in takes
the module's place (`rewardsmith/stand_in.py`). The module is imported for what it registers,
not for anything read from it, so the real one is also put back before any of the tracers'
own modules is imported (`TRACERS`): a program that does trace loses only the time saved.
`__file__` is None so that `inspect`, which torch calls to name where an operator was registered
and which reads `__file__` of every loaded module, does not count as a use.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

from rewardsmith.stand_in import install, load_real

NAME = "torch._meta_registrations"
TRACERS = frozenset(
    {
        "torch._dynamo",  # torch.compile; its own import breaks without the module first
        "torch._inductor",
        "torch._functorch.aot_autograd",
        "torch.export._trace",  # torch.export.export
    }
)
"""The tracers' entry modules. None is imported by the real module itself: one that were would
run twice (once in the restore, once for the import that asked for it). TorchDynamo's import
fails without the module in place (a cycle between `torch.utils._content_store` and
`torch._prims` that the usual order hides)."""


class RestoreBeforeTracing(importlib.abc.MetaPathFinder):
    """First on `sys.meta_path`: finds nothing itself, but puts the real module back before a
    tracer's module is imported."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """Restore at a tracer's import; the import then goes on as usual."""
        if fullname in TRACERS:
            restore()
        return None


_FINDER = RestoreBeforeTracing()


def restore() -> None:
    """The real `torch._meta_registrations` in place of its stand-in, as `import torch` left it."""
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_FINDER)
    load_real(NAME)


if "torch" not in sys.modules:  # too late once torch is imported: it imported the module itself
    install(NAME, __doc__, __file__=None)
    sys.meta_path.insert(0, _FINDER)
