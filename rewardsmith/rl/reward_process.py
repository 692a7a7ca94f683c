"""The learner's side of the reward process: candidate reward code out of the learner's process.

Training needs the candidate reward on every step, but the learner's process holds what decides
the candidate's fate: the weights it saves, the metrics, the result. Reward code in that process
could rewrite them (replace the saved weights with a hand-written controller, and the reward-free
evaluator would measure a perfect policy for a reward that is identically zero). So the reward
runs in a child process of its own (`rewardsmith.programs.reward_host`), confined further than the
learner: no writable directory at all, the job directory not even readable, its own PID
namespace where the kernel allows. One exchange per vectorised step carries the fields the
reward reads for all N environments; the replies are checked as hostile input.

If the reward process dies (a segfault, `os._exit`, a kill by a limit), the learner saves what
it has learned and then exits the same way (`RewardProcessDied.exit_code`), so the orchestrator
classifies the death exactly as it would a worker's.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from rewardsmith.envs.schema import StateBatch
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.rl import reward_wire as wire

HOST_MODULE = "rewardsmith.programs.reward_host"
PR_SET_DUMPABLE = 4


class RewardProcessDied(Exception):
    """The reward process ended without answering; the learner exits as it did."""

    def __init__(self, returncode: int | None) -> None:
        self.returncode = returncode
        if returncode is not None and returncode < 0:
            name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else ""
            what = f"was killed by signal {name or -returncode}"
        else:
            what = f"exited with status {returncode}"
        super().__init__(f"the reward process {what}")

    @property
    def exit_code(self) -> int:
        """The status the worker exits with: as if the reward had run in it (128 + signal)."""
        if self.returncode is None:
            return 1
        return 128 - self.returncode if self.returncode < 0 else self.returncode


def make_non_dumpable() -> None:
    """No process of our uid can read our memory or trace us through /proc after this."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class RewardProcess:
    """A candidate reward running in its own process; call it like a checked reward function.

    `__call__(state, action, next_state, step)` takes state batches (read lazily: only the
    fields the reward reads are sent) and returns the total and components as float64 `[N]`,
    or raises the reward's RewardError. Use as a context manager, or call `close()`.
    """

    def __init__(self, source: str, filename: str, field_names: Sequence[str]) -> None:
        self.field_names = list(field_names)
        self.wanted: tuple[str, ...] = ()  # the fields this reward has been seen to read
        to_host, from_learner = os.pipe()
        from_host, to_learner = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, "-m", HOST_MODULE, str(to_host), str(to_learner)],
            stdin=subprocess.DEVNULL,
            pass_fds=(to_host, to_learner),
        )
        os.close(to_host)
        os.close(to_learner)
        self.channel = wire.Channel(from_host, from_learner)
        make_non_dumpable()  # before the reward's code exists anywhere
        try:
            self.channel.send_init(source, filename, self.field_names)
            self.mechanisms = self._confinement()
            reply = self._reply(None)
        except BaseException:
            self.close()
            raise
        if reply.op == "error" and reply.error is not None:
            self.close()
            raise reply.error
        if reply.op != "ready":
            raise self._broken(f"it answered the reward's loading with {reply.op!r}")

    def __enter__(self) -> RewardProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(
        self, state: StateBatch, action: np.ndarray, next_state: StateBatch, step: int | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One checked call; a field the reward reads unsent is added and the call sent again."""
        n = len(action)
        action = np.ascontiguousarray(action)
        for _ in range(len(self.field_names) + 1):
            arrays: list[np.ndarray] = []
            for name in self.wanted:
                arrays += (_plain(state[name]), _plain(next_state[name]))
            try:
                self.channel.send_call(step, action, self.wanted, arrays)
            except wire.WireError:
                raise self._died() from None
            reply = self._reply(n)
            if reply.op == "need" and reply.need:
                self.wanted += tuple(name for name in reply.need if name not in self.wanted)
                continue
            if reply.op == "error" and reply.error is not None:
                raise reply.error
            if reply.op == "result" and reply.total is not None and reply.components is not None:
                return _checked(reply.total, reply.components, step)
            if reply.op == "totals":
                raise self._broken("it answered a call with totals")
            raise self._broken(f"it answered a call with {reply.op!r}")
        raise self._broken("it kept asking for fields it had been sent")

    def totals(self, transitions: Transitions) -> np.ndarray:
        """The totals `[T, N]` of T consecutive steps, in one exchange. The reward process calls
        the reward once on all of them; where that call fails, its RewardError is raised as it
        came (naming the steps the call held) and the reward is not called again."""
        steps = np.asarray(transitions.steps, dtype=np.int64)
        action = np.ascontiguousarray(transitions.actions)
        shape = action.shape[:2]
        for _ in range(len(self.field_names) + 1):
            arrays: list[np.ndarray] = []
            for name in self.wanted:
                arrays += transitions.field(name)
            try:
                self.channel.send_calls(steps, action, self.wanted, arrays)
            except wire.WireError:
                raise self._died() from None
            reply = self._reply(shape[0] * shape[1])
            if reply.op == "need" and reply.need:
                self.wanted += tuple(name for name in reply.need if name not in self.wanted)
                continue
            if reply.op == "error" and reply.error is not None:
                raise reply.error
            if reply.op == "totals" and reply.total is not None:
                return _checked_totals(reply.total.reshape(shape), transitions.steps)
            raise self._broken(f"it answered a batch with {reply.op!r}")
        raise self._broken("it kept asking for fields it had been sent")

    def _confinement(self) -> list[str]:
        """What confines the reward process, from its first message: sent before it reads the
        reward's source, so no reward code can have written it. Any later claim is not kept."""
        reply = self._reply(None)
        if reply.op != "confined" or reply.mechanisms is None:
            raise self._broken(f"its first message was {reply.op!r}, not its confinement")
        return reply.mechanisms

    def _reply(self, n: int | None) -> wire.Reply:
        try:
            reply = self.channel.receive_reply(n, self.field_names)
        except wire.WireError as exc:
            raise self._broken(str(exc)) from None
        if reply is None:
            raise self._died()
        return reply

    def _died(self) -> RewardProcessDied:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        return RewardProcessDied(self.process.returncode)

    def _broken(self, why: str) -> RewardError:
        self.close()
        return RewardError(
            ErrorCategory.SANDBOX_DIED, f"the reward process broke the protocol: {why}"
        )

    def close(self) -> None:
        """Hang up and make sure the reward process is gone."""
        with contextlib.suppress(OSError):
            self.channel.close()
        if self.process.poll() is None:
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Transitions(Protocol):
    """T consecutive vectorised steps, kept by the learner until their rewards are needed."""

    @property
    def steps(self) -> Sequence[int]:
        """The step number of each of the T steps, for naming a failing step in errors."""
        ...

    @property
    def actions(self) -> np.ndarray:
        """`[T, N, ...]`, as the contract gives actions."""
        ...

    def field(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Field `name` before and after each step: float64 `[T, N, ...]` each, contiguous."""
        ...


def _checked_totals(totals: np.ndarray, steps: Sequence[int]) -> np.ndarray:
    """Every total finite in float32, what training uses (a larger one becomes inf there; below
    it no sum of them can overflow); the reward process may lie about having checked. Else the
    error names the first step that holds a bad total."""
    if math.isfinite(np.add.reduce(totals, axis=None)) and not _past_float32(totals):
        return totals
    bad = np.flatnonzero(~(np.abs(totals.reshape(-1)) <= FLOAT32_MAX))  # NaN compares false
    first = int(bad[0]) // totals.shape[1]
    if not np.isfinite(totals[first]).all():
        message = "the total reward is not finite"
    else:
        message = (
            f"the total reward is beyond float32's range ({FLOAT32_MAX:.3g}), which training uses"
        )
    raise RewardError(ErrorCategory.NONFINITE_REWARD, message, step=steps[first])


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _past_float32(values: np.ndarray) -> bool:
    return values.size > 0 and float(np.max(np.abs(values))) > FLOAT32_MAX


def _plain(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64)


def _checked(
    total: np.ndarray, components: dict[str, np.ndarray], step: int | None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The learner's own check of a reply: the reward process may lie about having checked it."""
    finite = math.isfinite(
        np.add.reduce(total) + sum(np.add.reduce(v) for v in components.values())
    )
    if finite and not _past_float32(total):
        return total, components  # a sum is finite only if every value is: one cheap check
    if not np.isfinite(total).all() or _past_float32(total):
        raise RewardError(
            ErrorCategory.NONFINITE_REWARD,
            f"the total reward is not finite in float32 (beyond {FLOAT32_MAX:.3g}), which "
            "training uses",
            step=step,
        )
    for name, values in components.items():
        if not np.isfinite(values).all():
            raise RewardError(
                ErrorCategory.NONFINITE_REWARD,
                f"component {name!r} is not finite",
                step=step,
                component=name,
            )
    return total, components
