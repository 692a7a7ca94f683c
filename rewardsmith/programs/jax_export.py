"""The traced reward as serialised StableHLO: made in the sandboxed tracer, checked in the trainer.

`export_reward` traces a contract reward (already bound to `jax.numpy`) over a symbolic batch
size `N` and serialises it with `jax.export`. `load_reward_export` is the trainer's side: it
deserialises the bytes (written by a sandboxed program, so hostile), and refuses anything but a
pure computation of the declared inputs: host callbacks and custom calls (other than JAX's own
shape assertions), host transfers, disabled safety checks, or inputs and outputs other than the
contract's.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax import export as jax_export

from rewardsmith.job_spec import EXPORT_CAP
from rewardsmith.programs.jax_contract import JaxStateBatch, incompatible
from rewardsmith.reward.call import RewardFn
from rewardsmith.reward.check import MAX_COMPONENT_NAME, MAX_COMPONENTS
from rewardsmith.reward.errors import ErrorCategory, RewardError

PLATFORMS = ("cpu", "cuda")
MAX_NAME = MAX_COMPONENT_NAME  # component names, and other short names in a record
ALLOWED_CUSTOM_CALLS = frozenset({"shape_assertion"})  # jax.export's own check of the batch size
_CUSTOM_CALL = re.compile(r"custom_call\s*@([\w.$-]+)|call_target_name\s*=\s*\"([^\"]*)\"")
_HOST_OPS = re.compile(r"\b(stablehlo|mhlo)\.(send|recv|infeed|outfeed)\b")


@dataclass(frozen=True)
class Signature:
    """The inputs of a task's reward: the named fields (scalar per environment) and the action."""

    fields: tuple[str, ...]
    discrete: bool
    action_dim: int = 1
    shapes: tuple[tuple[int, ...], ...] = ()
    """Each field's shape per environment (`()` for a scalar); all scalars when empty."""

    @classmethod
    def for_task(cls, adapter: Any, discrete: bool, action_dim: int) -> Signature:
        """The inputs of `adapter`'s schema (names and shapes) with the JAX variant's action."""
        fields = adapter.schema.fields
        return cls(
            tuple(f.name for f in fields), discrete, action_dim, tuple(f.shape for f in fields)
        )

    def specs(self) -> tuple[Any, Any, Any]:
        """Abstract (state, action, next_state) over a symbolic batch `N`: what `export_reward`
        traces and what `load_reward_export` requires of an export."""
        (n,) = jax_export.symbolic_shape("N")
        shapes = self.shapes or ((),) * len(self.fields)
        state = {
            name: jax.ShapeDtypeStruct((n, *shape), jnp.float32)
            for name, shape in zip(self.fields, shapes, strict=True)
        }
        if self.discrete:
            action = jax.ShapeDtypeStruct((n,), jnp.int32)
        else:
            action = jax.ShapeDtypeStruct((n, self.action_dim), jnp.float32)
        return state, action, dict(state)


def export_reward(fn: RewardFn, signature: Signature, filename: str) -> tuple[bytes, list[str]]:
    """Trace `fn` over a batch of any size; the serialised export and the component names.

    Raises `jax_incompatible` (with the reward's line and the fix) when it cannot be traced, and
    the contract's own errors for a result of the wrong type or shape.
    """
    names: list[str] = []

    def traced(state: Any, action: Any, next_state: Any) -> Any:
        result = fn(JaxStateBatch(state), action, JaxStateBatch(next_state))
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
            raise RewardError(
                ErrorCategory.RETURN_TYPE_ERROR,
                "compute_reward must return (total, {name: component}) under jax.numpy too",
            )
        total, components = result
        names.extend(str(k) for k in components)
        as_array = lambda v: jnp.asarray(v, dtype=jnp.float32)  # noqa: E731
        return as_array(total), {str(k): as_array(v) for k, v in components.items()}

    try:
        with warnings.catch_warnings():  # np.float64 is float32 here; the agreement check judges
            warnings.filterwarnings("ignore", "Explicitly requested dtype", UserWarning)
            exported = jax_export.export(jax.jit(traced), platforms=PLATFORMS)(*signature.specs())
    except RewardError:
        raise
    except Exception as exc:
        raise incompatible(exc, filename) from None
    for aval, name in zip(exported.out_avals, ["total", *sorted(names)], strict=False):
        if len(aval.shape) != 1:
            raise RewardError(
                ErrorCategory.SHAPE_ERROR,
                f"under jax.numpy the reward's {name!r} has shape {aval.shape}, not [N]",
                component=None if name == "total" else name,
            )
    return bytes(exported.serialize()), sorted(names)


def _refuse(problem: str) -> RewardError:
    return RewardError(ErrorCategory.BAD_WORKER_OUTPUT, f"reward export refused: {problem}")


def load_reward_export(data: bytes, signature: Signature) -> tuple[Any, list[str]]:
    """The checked `Exported` and its component names (sorted), from untrusted bytes."""
    if len(data) > EXPORT_CAP:
        raise _refuse(f"{len(data):,} bytes, over the {EXPORT_CAP:,}-byte cap")
    try:
        exported = jax_export.deserialize(bytearray(data))
    except Exception as exc:
        raise _refuse(f"it is not a jax.export serialisation ({type(exc).__name__})") from None
    if exported.disabled_safety_checks:
        raise _refuse(f"it disables safety checks {list(exported.disabled_safety_checks)}")
    platform = jax.default_backend()
    if platform not in exported.platforms:
        raise _refuse(f"it was lowered for {list(exported.platforms)}, not for {platform}")
    text = exported.mlir_module()
    for match in _CUSTOM_CALL.finditer(text):
        target = match.group(1) or match.group(2)
        if target not in ALLOWED_CUSTOM_CALLS:
            raise _refuse(f"it holds a custom call or host callback {target!r}")
    if (host := _HOST_OPS.search(text)) is not None:
        raise _refuse(f"it holds a host transfer ({host.group(0)})")
    expected_in = jax.tree.structure((signature.specs(), {}))  # (args, kwargs)
    if str(exported.in_tree) != str(expected_in):
        raise _refuse("its inputs are not the task's state fields and action")
    expected_avals = [(s.dtype, len(s.shape)) for s in jax.tree.leaves(signature.specs())]
    if [(a.dtype, len(a.shape)) for a in exported.in_avals] != expected_avals:
        raise _refuse("its input shapes or dtypes are not the contract's")
    names = _component_names(exported)
    for aval in exported.out_avals:
        if len(aval.shape) != 1 or aval.dtype != jnp.float32:
            raise _refuse(f"an output is {aval.dtype}{list(aval.shape)}, not float32[N]")
    return exported, names


def _component_names(exported: Any) -> list[str]:
    """The output must be `(total, {name: component})` with plain, bounded names."""
    try:
        example = jax.tree.unflatten(exported.out_tree, list(range(exported.out_tree.num_leaves)))
    except Exception:
        raise _refuse("its output structure cannot be read") from None
    if not (
        isinstance(example, tuple)
        and len(example) == 2
        and isinstance(example[0], int)
        and isinstance(example[1], dict)
    ):
        raise _refuse("its output is not (total, {name: component})")
    names = list(example[1])
    if len(names) > MAX_COMPONENTS or not all(
        isinstance(n, str) and 0 < len(n) <= MAX_NAME for n in names
    ):
        raise _refuse(f"its components are not at most {MAX_COMPONENTS} names of text")
    return names


def call_export(
    exported: Any, fields: Sequence[str], state: Any, action: Any, next_state: Any
) -> Any:
    """Call the export on dicts of `[N]` / `[N, d]` fields (only the signature's) and actions."""
    pick = lambda s: {name: jnp.asarray(s[name], jnp.float32) for name in fields}  # noqa: E731
    return exported.call(pick(state), action, pick(next_state))
