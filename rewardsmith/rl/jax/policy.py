"""The policy network of the JAX backend, and its parameters on disk (arrays only, no pickle).

The network is built from trusted hyperparameters (the job file) in both the trainer and the
evaluator; only the parameter arrays travel between them, as `policy_params.npz` keyed by their
path in the parameter tree. Loading checks every array against the network's own template.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from brax.training import types as brax_types
from brax.training.acme import running_statistics, specs
from brax.training.agents.ppo import networks as ppo_networks

from rewardsmith.rl.jax.budgets import PPOConfig

PARAMS_FILE = "policy_params.npz"
PARAMS_CAP = 64 * 1024 * 1024


def network_factory(config: PPOConfig) -> Any:
    """Brax's PPO network builder with the config's hidden layers; trainer and evaluator both
    build from it, so the saved parameters fit the rebuilt network."""
    hidden = tuple(config.hidden_sizes)
    return functools.partial(
        ppo_networks.make_ppo_networks,
        policy_hidden_layer_sizes=hidden,
        value_hidden_layer_sizes=hidden,
    )


def make_policy_fn(config: PPOConfig, obs_size: int, action_size: int) -> tuple[Any, Any]:
    """Brax's `make_policy` and a template of (normalizer, policy) parameters for this network."""
    normalize = (
        running_statistics.normalize
        if config.normalize_observations
        else brax_types.identity_observation_preprocessor
    )
    network = network_factory(config)(
        (obs_size,), action_size, preprocess_observations_fn=normalize
    )
    template = (
        running_statistics.init_state(specs.Array((obs_size,), jnp.dtype("float32"))),
        network.policy_network.init(jax.random.PRNGKey(0)),
    )
    return ppo_networks.make_inference_fn(network), template


def _flat(params: Any) -> dict[str, np.ndarray]:
    leaves, _ = jax.tree_util.tree_flatten_with_path(params)
    return {jax.tree_util.keystr(path): np.asarray(leaf) for path, leaf in leaves}


def save_params(params: Any, path: Path) -> None:
    """(normalizer, policy) parameters as named arrays."""
    with path.open("wb") as handle:
        np.savez(handle, **_flat(params[:2]))  # type: ignore[arg-type]


def load_params(path: Path, template: Any) -> Any:
    """Parameters shaped exactly as `template`; anything else raises ValueError."""
    if path.stat().st_size > PARAMS_CAP:
        raise ValueError(f"{path.name} is over {PARAMS_CAP:,} bytes")
    with np.load(path, allow_pickle=False) as data:
        arrays = {key: data[key] for key in data.files}
    leaves, treedef = jax.tree_util.tree_flatten_with_path(template)
    wanted = {jax.tree_util.keystr(path) for path, _ in leaves}
    if set(arrays) != wanted:
        raise ValueError(f"{path.name} does not hold this network's parameters")
    values = []
    for key_path, leaf in leaves:
        array = arrays[jax.tree_util.keystr(key_path)]
        if array.shape != np.shape(leaf) or array.dtype != jnp.asarray(leaf).dtype:
            raise ValueError(f"{path.name}: {jax.tree_util.keystr(key_path)} has the wrong shape")
        if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
            raise ValueError(f"{path.name}: {jax.tree_util.keystr(key_path)} is not finite")
        values.append(jnp.asarray(array))
    return jax.tree_util.tree_unflatten(treedef, values)


def config_from_job(hyperparams: dict[str, Any]) -> PPOConfig:
    """The PPO settings stored in a job's hyperparameters; other keys are ignored and missing
    ones keep their defaults."""
    known = {k: v for k, v in hyperparams.items() if k in PPOConfig.__dataclass_fields__}
    if "hidden_sizes" in known:
        known["hidden_sizes"] = tuple(int(h) for h in known["hidden_sizes"])
    return PPOConfig(**known)
