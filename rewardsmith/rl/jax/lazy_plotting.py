"""gymnax without its plotting libraries' import, in every sandboxed JAX program.

`import gymnax` imports every gymnax environment, and its Pong imports matplotlib's pyplot and
seaborn (scipy.stats under it) for its `render`: about 1.1 s of the 1.4 s that `import gymnax`
takes on 2 cores (`benchmarks/gymnax_import.py`), paid by every tracer, trainer, evaluator and
video program of a gymnax task, none of which plots. So until something uses them, both are
stand-ins: the first attribute asked of one imports the real module in its place, so a gymnax
that does need them loses only the time saved.
"""

from __future__ import annotations

from rewardsmith import stand_in

DEFERRED = ("seaborn", "matplotlib.pyplot")


def install() -> None:
    """Stand in for the plotting modules that are not imported yet."""
    for name in DEFERRED:
        stand_in.install(name)
