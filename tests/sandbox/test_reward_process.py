"""The reward runs in a process of its own: it cannot forge what the learner saves, or reach it.

Issue class 3: a reward sharing the learner's process replaced the weights the worker saves with
a hand-written controller, and the reward-free evaluator measured a near-perfect CartPole policy
for a reward that is identically zero. Here the same attack, and the ways a reward process could
reach the learner (its job directory, its memory, signals), are tried for real; the protocol's
checks are tried with a fake reward process that sends garbage.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from rewardsmith.envs import load_task
from rewardsmith.envs.schema import StateBatch
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.rl import reward_wire as wire
from rewardsmith.rl.reward_process import RewardProcess, RewardProcessDied
from rewardsmith.sandbox.types import Sandbox
from tests.sandbox.bad_reward_kit import ESCAPE, LIMITS, MODULES, expect, reward, train
from tests.sandbox.fake_reward_host import fake_reward

E = ErrorCategory
CARTPOLE = load_task("cartpole")
ZERO = "    zero = np.zeros(len(action))\n    return zero, {'zero': zero}\n"

# Installed by the reward on its first call: replace the worker's `save_policy` (the worker runs
# as __main__) with one that saves a hand-written controller, push right when 10 theta +
# 3 theta_dot > 0, through the policy's first hidden unit.
FORGE = f"""\
    if not done[0]:
        done[0] = True
        mods = {MODULES}
        try:
            torch = mods['torch'] if 'torch' in mods else imp('torch')

            def forged(model, path):
                weights = model.policy.state_dict()
                with torch.no_grad():
                    for value in weights.values():
                        value.zero_()
                    weights['mlp_extractor.policy_net.0.weight'][0] = torch.tensor([0., 0., 10., 3.])
                    weights['mlp_extractor.policy_net.2.weight'][0, 0] = 10.0
                    weights['action_net.weight'][0, 0] = -5.0
                    weights['action_net.weight'][1, 0] = 5.0
                getattr(torch, 'sa' + 've')(weights, path)

            mods['__main__'].save_policy = forged
        except BaseException as exc:  # the attack failed; stay quiet and keep training
            print('attack failed:', repr(exc))
"""


@pytest.mark.slow
def test_a_zero_reward_cannot_save_a_hand_written_controller(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    source = reward(FORGE + ZERO, ESCAPE + "done = [False]\n")
    outcome = train(CARTPOLE, sandbox, source, tmp_path, LIMITS, steps=2048)
    assert outcome.ok, outcome.error
    # Trained on zero reward for 2k steps, a policy balances for tens of steps; the forged
    # controller balances for hundreds (it did, 500, while the reward shared the learner).
    assert outcome.fitness is not None and outcome.fitness < 150, outcome.fitness


@pytest.mark.slow
def test_the_reward_cannot_touch_the_job_dir_or_the_learner(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Writes anywhere, reads of the job dir, signals to and /proc views of the learner fail."""
    body = """\
    os = imp('os')
    results = []
    learner = os.getppid()
    attempts = {
        'write job dir': lambda: imp('io').open('policy.pt', 'wb').write(b'forged'),
        'write /tmp': lambda: imp('io').open('/tmp/x', 'w').write('x'),
        'read job.json': lambda: imp('io').open('job.json').read(),
        'list job dir': lambda: os.listdir('.'),
        'read learner memory': lambda: imp('io').open('/proc/%d/mem' % learner, 'rb').read(1),
        'read learner environ': lambda: imp('io').open('/proc/%d/environ' % learner).read(),
        'signal learner': lambda: os.kill(learner, 0) if learner > 1 else 1 / 0,
        'new namespace': lambda: imp('ctypes').CDLL(None).unshare(0x10000000) == 0 or 1 / 0,
    }
    for name, attempt in attempts.items():
        try:
            attempt()
            results.append('DID ' + name)
        except BaseException as exc:
            results.append('denied ' + name + ': ' + repr(exc)[:80])
    try:
        os.kill(-1, 9)  # every process it may signal; the learner must survive to report this
    except OSError:
        pass
    raise ValueError(' | '.join(results))
"""
    error = expect(train(CARTPOLE, sandbox, reward(body, ESCAPE), tmp_path), E.RUNTIME_ERROR)
    assert "DID " not in error.message, error.message
    assert (tmp_path / "job" / "policy.pt").read_bytes()[:6] != b"forged"


def test_a_reward_that_reads_fields_lazily_gets_what_it_reads(tmp_path: Path) -> None:
    """Only the fields the reward reads travel; a field read later (a branch) is sent then."""
    source = textwrap.dedent(
        """\
        import numpy as np
        calls = [0]

        def compute_reward(state, action, next_state):
            calls[0] += 1
            value = next_state.pole_angle * 0 + 1.0
            if calls[0] > 3:
                value = value + 0 * state.cart_velocity
            return value, {"up": value}
        """
    )
    names = list(CARTPOLE.schema.names)
    batch = StateBatch({name: np.full(4, float(i)) for i, name in enumerate(names)})
    with RewardProcess(source, str(tmp_path / "reward.py"), names) as remote:
        for _ in range(5):
            total, parts = remote(batch, np.zeros(4, dtype=np.int64), batch, 0)
            assert total.tolist() == [1.0] * 4 and list(parts) == ["up"]
        assert sorted(remote.wanted) == ["cart_velocity", "pole_angle"]


def test_load_errors_come_back_named(tmp_path: Path) -> None:
    with pytest.raises(RewardError) as caught:
        RewardProcess("def compute_reward(state, action):\n    pass\n", "r.py", ["x"])
    assert caught.value.category == E.SIGNATURE_ERROR


def test_a_dying_reward_process_is_reported_as_its_death(tmp_path: Path) -> None:
    source = reward("    imp('os')._exit(7)\n", ESCAPE)
    batch = StateBatch({name: np.zeros(2) for name in CARTPOLE.schema.names})
    with (
        RewardProcess(source, "r.py", CARTPOLE.schema.names) as remote,
        pytest.raises(RewardProcessDied) as died,
    ):
        remote(batch, np.zeros(2, dtype=np.int64), batch, 0)
    assert died.value.exit_code == 7


def _json(message: dict[str, object]) -> bytes:
    import json

    return b"J" + json.dumps(message).encode()


@pytest.mark.parametrize(
    ("replies", "says"),
    [
        ([b"R\x00\x00\x00\x00" + b"\x00" * 16], "undeclared component names"),
        (
            [_json({"op": "names", "id": 0, "names": ["a"]}), b"R\x00\x00\x00\x00" + b"\0" * 8],
            "bytes for 1 components",
        ),
        ([_json({"op": "names", "id": 0, "names": [1]})], "not text"),
        ([_json({"op": "error", "error": {"category": "fitness_500", "message": "x"}})], "unknown"),
        ([_json({"op": "error", "error": {"category": "timeout", "message": 5}})], "not text"),
        ([_json({"op": "need", "fields": ["secret_field"]})], "unknown field"),
        ([b"Jnot json"], "not JSON"),
        ([b"X"], "unknown kind"),
    ],
    ids=["undeclared", "short", "name-type", "category", "message", "field", "json", "kind"],
)
def test_garbage_from_the_reward_process_is_a_named_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, replies: list[bytes], says: str
) -> None:
    fake_reward(tmp_path, replies, monkeypatch)
    batch = StateBatch({name: np.zeros(2) for name in CARTPOLE.schema.names})
    with (
        RewardProcess("", "r.py", CARTPOLE.schema.names) as remote,
        pytest.raises(RewardError) as caught,
    ):
        remote(batch, np.zeros(2, dtype=np.int64), batch, 0)
    assert caught.value.category == E.SANDBOX_DIED
    assert says in caught.value.message


def test_a_huge_reply_is_refused_before_it_is_read() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, (1 << 30).to_bytes(4, sys.byteorder))
    channel = wire.Channel(read_end, write_end)
    with pytest.raises(wire.WireError, match="at most"):
        channel.receive_reply(8, ["x"])
    channel.close()


def test_nonfinite_values_are_caught_by_the_learner_too(tmp_path: Path) -> None:
    """Even if the reward process lied about checking its result, NaN never reaches training."""
    from rewardsmith.rl.reward_process import _checked

    with pytest.raises(RewardError) as caught:
        _checked(np.ones(3), {"a": np.array([1.0, np.nan, 1.0])}, step=9)
    assert caught.value.category == E.NONFINITE_REWARD and caught.value.component == "a"
