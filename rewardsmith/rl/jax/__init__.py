"""The JAX backend: the same tasks and reward contract, trained with JAX simulators and PPO.

Which tasks have it, and how to tell a user that the optional extra is missing. This module
imports nothing from JAX, so the core install (`pip install rewardsmith`) can list backends.

How a reward trains here (docs/jax_backend.md):

- `trace` (sandboxed): runs the reward under numpy and, with `np` bound to `jax.numpy`, traces it
  on the same recorded states, requires agreement, and exports the traced function as serialised
  StableHLO (`jax.export`). Reward Python runs here and nowhere else.
- `worker` (sandboxed, trusted code): deserialises the export, refuses host callbacks and custom
  calls, and trains Brax PPO on the task's JAX environment with the reward applied by a wrapper.
- `evaluate` (sandboxed, trusted code): the reward-free evaluation of the saved parameters.
"""

from __future__ import annotations

from rewardsmith.extras import pip_install

BACKENDS = ("sb3", "jax")

# Task ids with a JAX variant (module `rewardsmith.rl.jax.tasks`): gymnax and MJX.
GYMNAX_TASK_IDS = frozenset({"cartpole", "pendulum", "acrobot", "mountaincar-continuous"})
MJX_TASK_IDS = frozenset({"halfcheetah", "hopper", "walker2d", "ant", "humanoid"})
JAX_TASK_IDS = GYMNAX_TASK_IDS | MJX_TASK_IDS

INSTALL_HINT = f"install the JAX extra: {pip_install('jax')} (jax, brax, mujoco-mjx, gymnax)"


class BackendUnavailable(ValueError):
    """The task has no variant on the requested backend, or its libraries are not installed."""


def backends_of(task_id: str, uses_task_file: bool = False) -> tuple[str, ...]:
    """The backends a task trains on: every task on `sb3`, the built-in ones listed above on jax."""
    if not uses_task_file and task_id in JAX_TASK_IDS:
        return BACKENDS
    return ("sb3",)


def check_backend(backend: str, task_id: str, uses_task_file: bool = False) -> None:
    """Raise `BackendUnavailable` with what to do when `task_id` cannot train on `backend`."""
    if backend not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {backend!r}; choose {' or '.join(BACKENDS)}")
    if backend not in backends_of(task_id, uses_task_file):
        have = ", ".join(sorted(JAX_TASK_IDS))
        raise BackendUnavailable(
            f"task {task_id!r} has no {backend} backend; the tasks with one are: {have}"
        )
    if backend == "jax":
        from importlib.util import find_spec

        for name in ("jax", "brax", "gymnax", "flax", "optax"):
            if find_spec(name) is None:  # found, not imported: the orchestrator never needs JAX
                raise BackendUnavailable(f"the jax backend needs {name}: {INSTALL_HINT}")


def prepare_process() -> None:
    """Settings for a sandboxed JAX program, before JAX is imported: several workers share a GPU,
    so none takes most of its memory up front (XLA's default); gymnax's plotting imports wait
    until something plots (`lazy_plotting.py`)."""
    import os

    from rewardsmith.rl.jax import lazy_plotting

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    lazy_plotting.install()
