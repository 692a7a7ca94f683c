"""A trained SB3 policy's deterministic action, computed with numpy from its exported layers.

The reward-free programs (the evaluator, the video program) only ever ask a policy for its
deterministic action: a few dense layers. Importing torch and Stable-Baselines3 and rebuilding
the learner to run them cost each of those programs about 2 s of CPU to start (docs/benchmarks.md,
"What a sandboxed program costs to start"); numpy does the same arithmetic in float32 with no
learner at all. The worker exports the layers (`policy_io.save_actor`); the structure (the
activation, how the last layer becomes an action) comes from the trusted job and the task's
spaces, and only the numbers from the worker's file, whose shapes are checked.

Covered: PPO and SAC with SB3's `MlpPolicy` on a flat Box observation, for Discrete actions (the
most probable one) and Box actions (PPO's mean clipped to the bounds, with or without gSDE; SAC's
tanh-squashed mean scaled to the bounds). `actor_kind` says None for anything else, and the
caller rebuilds the learner instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from rewardsmith.job_spec import ACTOR_FILE, TrainJob

# The policy_kwargs that change nothing about the deterministic action's arithmetic beyond the
# layers' sizes (read from the file) and the activation (from the job).
_PLAIN_POLICY_KWARGS = frozenset({"net_arch", "activation_fn", "ortho_init", "log_std_init"})
_DEFAULT_ACTIVATION = {"ppo": "tanh", "sac": "relu"}  # SB3's MlpPolicy defaults
_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": np.tanh,
    "relu": lambda x: np.maximum(x, np.float32(0)),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, np.float32(0)))),
}
# How the last layer's output becomes an action.
CATEGORICAL, CLIPPED_MEAN, SQUASHED_MEAN = "categorical", "clipped mean", "squashed mean"


class ActorFileError(ValueError):
    """The worker's exported layers are not a network this job could have trained."""


def actor_kind(job: TrainJob, observation_space: gym.Space, action_space: gym.Space) -> str | None:
    """How the job's policy turns its last layer into an action, or None where numpy would not
    reproduce SB3's deterministic action exactly (the learner is then rebuilt instead)."""
    policy_kwargs = job.hyperparams.get("policy_kwargs", {})
    if not set(policy_kwargs) <= _PLAIN_POLICY_KWARGS:
        return None
    if policy_kwargs.get("activation_fn", _DEFAULT_ACTIVATION.get(job.algo)) not in _ACTIVATIONS:
        return None
    if not isinstance(observation_space, gym.spaces.Box):
        return None
    if job.algo == "ppo":
        if isinstance(action_space, gym.spaces.Discrete):
            return CATEGORICAL
        return CLIPPED_MEAN if isinstance(action_space, gym.spaces.Box) else None
    if job.algo == "sac" and not job.hyperparams.get("use_sde"):
        return SQUASHED_MEAN if isinstance(action_space, gym.spaces.Box) else None
    return None


def hidden_names(i: int) -> tuple[str, str]:
    """The file's names for hidden layer `i`'s weight and bias."""
    return f"hidden_weight_{i}", f"hidden_bias_{i}"


HEAD_NAMES = ("head_weight", "head_bias")


def _checked_layers(
    arrays: Mapping[str, np.ndarray], n_inputs: int, n_outputs: int
) -> list[tuple[np.ndarray, ...]]:
    """(weight, bias) pairs, first to last, that chain from `n_inputs` to `n_outputs`."""
    n_hidden = (len(arrays) - 2) // 2
    names = [hidden_names(i) for i in range(n_hidden)] + [HEAD_NAMES]
    if sorted(arrays) != sorted(name for pair in names for name in pair):
        raise ActorFileError(f"{ACTOR_FILE} holds unexpected arrays: {sorted(arrays)}")
    layers: list[tuple[np.ndarray, ...]] = []
    width = n_inputs
    for weight_name, bias_name in names:
        weight, bias = arrays[weight_name], arrays[bias_name]
        if (
            weight.dtype != np.float32
            or bias.dtype != np.float32
            or weight.ndim != 2
            or weight.shape[1] != width
            or bias.shape != weight.shape[:1]
        ):
            raise ActorFileError(
                f"{ACTOR_FILE}: {weight_name} {weight.dtype}{weight.shape} and {bias_name} "
                f"{bias.dtype}{bias.shape} do not take {width} inputs"
            )
        layers.append((weight.T.copy(), bias))
        width = weight.shape[0]
    if width != n_outputs:
        raise ActorFileError(f"{ACTOR_FILE}: the last layer gives {width} outputs, not {n_outputs}")
    return layers


def load_actor(
    arrays: Mapping[str, np.ndarray],
    job: TrainJob,
    observation_space: gym.Space,
    action_space: gym.Space,
) -> Callable[[np.ndarray], np.ndarray]:
    """The deterministic policy (a batch of raw observations to a batch of actions) from the
    worker's exported layers (the arrays of its `actor.npz`, read by the caller as a worker
    file); raises `ActorFileError` when they do not fit the job's task."""
    kind = actor_kind(job, observation_space, action_space)
    if kind is None:
        raise ValueError(f"a {job.algo} policy with {job.hyperparams} is not computed in numpy")
    action_shape: tuple[int, ...] = action_space.shape or ()
    n_inputs = int(np.prod(observation_space.shape or ()))
    space: Any = action_space
    n_outputs = int(space.n) if kind == CATEGORICAL else int(np.prod(action_shape))
    layers = _checked_layers(arrays, n_inputs, n_outputs)
    activation_name = job.hyperparams.get("policy_kwargs", {}).get(
        "activation_fn", _DEFAULT_ACTIVATION[job.algo]
    )
    activate = _ACTIVATIONS[activation_name]
    head_weight, head_bias = layers.pop()
    low: Any = getattr(space, "low", None)
    high: Any = getattr(space, "high", None)

    def act(obs: np.ndarray) -> np.ndarray:
        x = np.asarray(obs, dtype=np.float32).reshape(len(obs), n_inputs)
        for weight, bias in layers:
            x = activate(x @ weight + bias)
        out = x @ head_weight + head_bias
        if kind == CATEGORICAL:
            return np.argmax(out, axis=1)
        actions = out.reshape((-1, *action_shape))
        if kind == SQUASHED_MEAN:
            return low + (0.5 * (np.tanh(actions) + 1.0) * (high - low))  # SB3's unscale_action
        return np.clip(actions, low, high)

    return act


def obs_normalizer(
    stats: Mapping[str, np.ndarray], clip: float = 10.0, epsilon: float = 1e-8
) -> Callable[[np.ndarray], np.ndarray]:
    """VecNormalize's observation transform, rebuilt from the saved statistics' arrays."""
    try:
        mean, var = stats["mean"], stats["var"]
    except KeyError as missing:
        raise ActorFileError(f"the observation statistics lack {missing}") from None
    return lambda obs: np.clip((obs - mean) / np.sqrt(var + epsilon), -clip, clip).astype(
        np.float32
    )
