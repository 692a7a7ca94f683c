"""The one shim Brax's trainers need on recent JAX: `jax.device_put_replicated` left the public
API (jax 0.10), and `brax.training` still calls it to copy the training state to each device."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp


def _device_put_replicated(x: Any, devices: Sequence[Any]) -> Any:
    """One copy of every leaf of `x` per device, stacked on a new leading axis (what `pmap` takes)."""
    return jax.tree.map(lambda leaf: jnp.stack([jnp.asarray(leaf)] * len(devices)), x)


def install() -> None:
    """Give `jax` back `device_put_replicated` where it lacks it; idempotent."""
    if not hasattr(jax, "device_put_replicated"):
        jax.device_put_replicated = _device_put_replicated
