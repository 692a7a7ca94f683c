"""The reward process: the only place candidate reward code runs during training.

The learner (Stable-Baselines3 and the simulator, trusted code) starts this module as its child,
`python -m rewardsmith.programs.reward_host FD_IN FD_OUT`, and talks to it over two pipes
(`rewardsmith.rl.reward_wire`). Before it reads the reward's source from the pipe, this
process confines itself further than the sandbox around both of them:

- its own user and PID namespaces where the kernel allows it (the learner's PID does not exist
  for it: it can neither signal nor trace it);
- Landlock: nothing writable at all, and nothing readable but the interpreter and the installed
  packages (not the job directory, so it cannot touch the weights, metrics or results that the
  learner writes, nor read them);
- seccomp: no ptrace, no namespaces, no mounts, no network sockets.

The learner makes itself non-dumpable before it sends the source, so even where no namespace
can be made, this process (same uid) cannot read the learner's memory through `/proc`.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from rewardsmith.reward.errors import RewardError
    from rewardsmith.rl import reward_wire as wire

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000


def readable_paths() -> list[Path]:
    """What the reward process may read: the interpreter, the installed packages, system libs."""
    from rewardsmith.sandbox.process_isolation import interpreter_paths

    system = [Path(p) for p in ("/usr", "/lib", "/lib64", "/etc/ld.so.cache")]
    return [*interpreter_paths(), *(p for p in system if p.exists())]


def enter_own_namespaces() -> str | None:
    """New user and PID namespaces, then fork: the child is PID 1 of a namespace of its own.

    The parent waits and exits as its child did, so the learner sees one process die. Returns
    a description when it worked, None where the kernel or the outer sandbox forbids it.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0:
        return None
    pid = os.fork()
    if pid:
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            os._exit(128 + os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status))
    return "own user and PID namespaces"


def confine() -> list[str]:
    """Every layer this machine allows; returns their names for the learner's record."""
    in_force: list[str] = []
    namespaces = enter_own_namespaces()
    if namespaces:
        in_force.append(namespaces)
    from rewardsmith.sandbox.confine import ConfinementError, confine_self
    from rewardsmith.sandbox.process_isolation import listable_paths

    try:
        in_force += confine_self(readable=readable_paths(), writable=[], listable=listable_paths())
    except ConfinementError as exc:  # the sandbox around the learner still holds; say so
        in_force.append(f"not confined further: {exc}")
    return in_force


class _NeedField(BaseException):
    """Raised into reward code that reads a field the learner has not sent yet."""


class SentFields:
    """The fields the learner sent for one call (row `index` of a batch's `[T, N, ...]` arrays
    where given); records any other field the reward asked for."""

    def __init__(
        self, arrays: dict[str, np.ndarray], missing: set[str], index: int | None = None
    ) -> None:
        self.arrays, self.missing, self.index = arrays, missing, index

    def field(self, name: str) -> np.ndarray:
        """The sent array (its row); an unsent field is recorded, then `_NeedField` is raised."""
        array = self.arrays.get(name)
        if array is None:
            self.missing.add(name)
            raise _NeedField(name)
        return array if self.index is None else array[self.index]


def serve(channel: wire.Channel, mechanisms: list[str]) -> None:
    """Report the confinement, load the reward from the first message, then answer calls until
    the learner hangs up.

    The confinement goes first, before the reward's source is even read: once its module has
    run, the reward controls this process and could claim any confinement it likes. The learner
    keeps only this first report.
    """
    from rewardsmith.reward.errors import RewardError
    from rewardsmith.rl.reward_wire import Calls

    channel.send_confined(mechanisms)
    init = channel.receive_init()
    try:
        reward = LoadedReward(_load(init.source, init.filename), init.field_names, init.filename)
    except RewardError as load_error:
        channel.send_error(load_error)
        return
    channel.send_ready()
    while True:
        call = channel.receive_call()
        if call is None:
            return
        missing: set[str] = set()
        try:
            if isinstance(call, Calls):
                totals = reward.totals(call, missing)
            else:
                sent = (call.state, call.action, call.next_state)
                result = reward.call(sent, call.step, missing)
        except RewardError as error:
            if not missing:
                channel.send_error(error)
                continue
        except _NeedField:
            pass
        if missing:  # the reward read fields that were not sent (whatever it did with the signal)
            channel.send_need(sorted(missing))
        elif isinstance(call, Calls):
            channel.send_totals(totals)
        else:
            channel.send_result(*result)


Sent = tuple[dict[str, "np.ndarray"], "np.ndarray", dict[str, "np.ndarray"]]


class LoadedReward:
    """The candidate's reward function, called on the arrays the learner sent."""

    def __init__(self, reward_fn: Any, names: list[str], filename: str) -> None:
        self.reward_fn, self.names, self.filename = reward_fn, names, filename

    def call(
        self,
        sent: Sent,
        step: int | None,
        missing: set[str],
        index: int | None = None,
        row_steps: np.ndarray | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """One checked call on the sent (state, action, next_state), or on their row `index`;
        `row_steps` names each row's step (a batch of many steps)."""
        from rewardsmith.envs.schema import StateBatch
        from rewardsmith.reward.call import call_reward_batches

        state_arrays, action, next_arrays = sent
        state = StateBatch.from_source(self.names, SentFields(state_arrays, missing, index))
        next_state = StateBatch.from_source(self.names, SentFields(next_arrays, missing, index))
        return call_reward_batches(
            self.reward_fn, state, action, next_state, step, self.filename, row_steps
        )

    def totals(self, batch: wire.Calls, missing: set[str]) -> np.ndarray:
        """A batch's totals `[T, N]`, from one call on all T x N transitions.

        The contract's reward is a function of each transition (it never sees the step number,
        which only names errors; the checkpoints already call it on whole episodes), so one call
        gives what T calls would, at a fraction of the cost. Where that call fails, its error is
        the candidate's, naming the steps the call held: the reward is not run again step by
        step to find the failing one (a reward that fails only on batches trained as `ok` that
        way, issue 30, and a second run costs its time and memory again).
        """
        import numpy as np

        from rewardsmith.reward.errors import RewardError

        t, n = batch.action.shape[:2]

        def flat(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {name: a.reshape(t * n, *a.shape[2:]) for name, a in arrays.items()}

        action = batch.action.reshape(t * n, *batch.action.shape[2:])
        whole = (flat(batch.state), action, flat(batch.next_state))
        try:
            return self.call(whole, None, missing, row_steps=np.repeat(batch.steps, n))[0].reshape(
                t, n
            )
        except RewardError as error:
            if missing:
                raise
            raise _in_batch(error, batch.steps.tolist(), n) from None


def _in_batch(error: RewardError, steps: list[int], n: int) -> RewardError:
    """`error` naming the steps of the one call that raised it. A non-finite value names its own
    step (found in the values); for an exception, the call's first step stands for it (the
    failing transition is at or after it: which one is not known without a second run)."""
    where = f"in one call on the {len(steps)} x {n} transitions of steps {steps[0]} to {steps[-1]}"
    step = error.step if error.step is not None else steps[0]
    return replace(error, message=f"{error.message} ({where})", step=step)


def _load(source: str, filename: str) -> Any:
    """Check and execute the reward module from its source (the job dir is not readable here)."""
    from rewardsmith.reward.loader import load_reward_source

    return load_reward_source(source, filename)


def main(fd_in: int, fd_out: int) -> int:
    """Confine, then serve the learner on the pipes; 3 if the learner hung up or sent garbage."""
    # Namespaces need a single-threaded process, and Landlock confines only the calling thread:
    # confine before anything (numpy included) can start a thread.
    mechanisms = confine()
    from rewardsmith.reward.errors import RewardError
    from rewardsmith.rl import reward_wire as wire

    channel = wire.Channel(fd_in, fd_out)
    try:
        serve(channel, mechanisms)
    except (wire.WireError, RewardError) as error:  # the learner hung up or sent garbage
        print(f"reward process: {error}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    # Exit straight away: an atexit hook planted by the reward must not run after the last call.
    code = main(int(sys.argv[1]), int(sys.argv[2]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
