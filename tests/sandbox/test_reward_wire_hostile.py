"""Hostile replies on the reward wire end as named errors, never as a learner traceback.

Issue 30: a 30,000-deep JSON control frame or a 5,000-digit integer raised RecursionError /
ValueError in the learner (reported as `crashed`); more components than the wire carries were a
protocol break instead of the reward's contract error; and the confinement record came from the
reward process after the reward's module ran, so the reward could forge it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.schema import StateBatch
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.rl.reward_process import RewardProcess
from rewardsmith.sandbox.types import Sandbox
from tests.sandbox.bad_reward_kit import ESCAPE, MODULES, OK_RETURN, reward, train
from tests.sandbox.fake_reward_host import fake_reward

E = ErrorCategory
CARTPOLE = load_task("cartpole")
BATCH = StateBatch({name: np.zeros(2) for name in CARTPOLE.schema.names})
ACTION = np.zeros(2, dtype=np.int64)


def _call(source: str) -> RewardError:
    """The error of one call of `source` in a real reward process."""
    with (
        RewardProcess(source, "r.py", CARTPOLE.schema.names) as remote,
        pytest.raises(RewardError) as caught,
    ):
        remote(BATCH, ACTION, BATCH, 0)
    return caught.value


@pytest.mark.parametrize(
    "frame",
    [
        b"J" + b"[" * 30_000 + b"]" * 30_000,
        b'J{"op":"names","id":' + b"7" * 5_000 + b',"names":["a"]}',
    ],
    ids=["30000-deep", "5000-digit-integer"],
)
def test_a_control_frame_past_the_parsers_limits_is_a_protocol_break(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frame: bytes
) -> None:
    fake_reward(tmp_path, [frame], monkeypatch)
    with (
        RewardProcess("", "r.py", CARTPOLE.schema.names) as remote,
        pytest.raises(RewardError) as caught,
    ):
        remote(BATCH, ACTION, BATCH, 0)
    assert caught.value.category == E.SANDBOX_DIED
    assert "broke the protocol" in caught.value.message


@pytest.mark.parametrize(
    ("components", "says"),
    [
        ("{'c%d' % i: one for i in range(257)}", "257 components; at most 256"),
        ("{'x' * 201: one}", "201 characters; at most 200 are allowed"),
        ("{'': one}", "empty"),
    ],
    ids=["257-components", "long-name", "empty-name"],
)
def test_components_the_wire_cannot_carry_are_a_contract_error(components: str, says: str) -> None:
    """The reward's own mistake, named as the checker names a bad component dict."""
    body = f"    one = np.ones(len(action))\n    return one, {components}\n"
    error = _call(reward(body))
    assert error.category == E.RETURN_TYPE_ERROR, error
    assert says in error.message and error.step == 0


FORGED = ["own user and PID namespaces", "landlock v99 (forged)", "seccomp"]
# Claims a stronger confinement than the host has, in the message the learner used to keep.
FORGE_READY = f"""\
wire = {MODULES}['rewardsmith.rl.reward_wire']

def forged_ready(self, *args, **kwargs):
    self._send(wire._json({{'op': 'ready', 'mechanisms': {FORGED!r}}}))

wire.Channel.send_ready = forged_ready
"""
# Rewrites the host's own list of mechanisms in place before it is reported.
FORGE_LIST = f"""\
for found in imp('gc').get_objects():
    if type(found) is list and found and all(type(x) is str for x in found):
        if any(x.startswith(('landlock', 'seccomp', 'not confined')) for x in found):
            found[:] = {FORGED!r}
"""


@pytest.mark.parametrize("forgery", [FORGE_READY, FORGE_LIST], ids=["ready", "list"])
def test_the_reward_cannot_forge_its_confinement_record(forgery: str) -> None:
    """What confines the reward process is reported before the reward's module runs."""
    names = CARTPOLE.schema.names
    with RewardProcess(reward(OK_RETURN), "r.py", names) as honest:
        expected = honest.mechanisms
    with RewardProcess(reward(OK_RETURN, ESCAPE + forgery), "r.py", names) as forged:
        assert forged.mechanisms == expected
        total, _ = forged(BATCH, ACTION, BATCH, 0)  # the reward itself still works
    assert expected and "landlock v99 (forged)" not in expected
    assert total.tolist() == [1.0, 1.0]


def test_a_second_confinement_claim_breaks_the_protocol() -> None:
    source = reward(
        OK_RETURN,
        ESCAPE
        + f"wire = {MODULES}['rewardsmith.rl.reward_wire']\n"
        + "fd = int(imp('sys').argv[2])\n"
        + f"frame = wire._json({{'op': 'confined', 'mechanisms': {FORGED!r}}})\n"
        + "imp('os').write(fd, len(frame).to_bytes(4, imp('sys').byteorder) + frame)\n",
    )
    with pytest.raises(RewardError) as caught:
        RewardProcess(source, "r.py", CARTPOLE.schema.names)
    assert caught.value.category == E.SANDBOX_DIED and "'confined'" in caught.value.message


@pytest.mark.slow
def test_the_recorded_confinement_is_the_hosts_not_the_rewards(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """End to end: the worker's `result.json` keeps what the host reported before loading."""
    outcome = train(CARTPOLE, sandbox, reward(OK_RETURN, ESCAPE + FORGE_READY), tmp_path)
    assert outcome.ok, outcome.error
    recorded = json.loads((tmp_path / "job" / "result.json").read_text())["reward_confinement"]
    assert recorded and recorded != FORGED
