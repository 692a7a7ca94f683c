"""gymnax's plotting imports wait in the JAX programs until something plots, then work as before."""

from __future__ import annotations

import subprocess
import sys
from importlib.util import find_spec

import pytest

# Fresh interpreters that import JAX and gymnax: over a second each.
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        find_spec("gymnax") is None,
        reason="the jax extra is not installed: pip install -e '.[jax]'",
    ),
]

PROBE = """
import sys
from rewardsmith.rl.jax import prepare_process
from rewardsmith.stand_in import StandIn
prepare_process()
import gymnax
env, params = gymnax.make("CartPole-v1")
print("after gymnax:", "scipy.stats" in sys.modules, isinstance(sys.modules["seaborn"], StandIn))
from gymnax.environments.misc import pong
palette = pong.sns.color_palette("cubehelix", 3)
figure = pong.plt.figure()
print("after plotting:", len(palette), type(figure).__name__, isinstance(sys.modules["seaborn"], StandIn))
"""


def test_gymnax_imports_no_plotting_until_something_plots() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines() == [
        "after gymnax: False True",  # neither scipy.stats nor the real seaborn loaded
        "after plotting: 3 Figure False",  # the first use loaded the real modules in their place
    ], done.stderr


def test_a_module_already_imported_is_left_alone() -> None:
    code = (
        "import sys, seaborn\n"  # which imports matplotlib's pyplot too
        "from rewardsmith.rl.jax import lazy_plotting\n"
        "lazy_plotting.install()\n"
        "assert sys.modules['seaborn'] is seaborn\n"
        "assert sys.modules['matplotlib.pyplot'] is seaborn.utils.plt\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
