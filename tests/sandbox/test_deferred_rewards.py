"""PPO takes a rollout's rewards from the reward process at once, and learns exactly the same.

One exchange per rollout instead of one per step is what keeps the reward process's cost within
target (docs/benchmarks.md); these tests hold it to giving PPO the very same rewards, returns and
advantages as the step-by-step path, and to naming a failing step as that path would.
"""

from __future__ import annotations

import struct
import textwrap
from pathlib import Path

import numpy as np
import pytest
from stable_baselines3.common.vec_env import VecNormalize

from rewardsmith.envs import load_task
from rewardsmith.envs.schema import StateBatch
from rewardsmith.jobs.training import make_job, train_reward
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.loader import load_reward
from rewardsmith.rl.reward_process import RewardProcess
from rewardsmith.rl.sb3.deferred_rewards import deferred_ppo_kwargs
from rewardsmith.rl.sb3.policy_io import build_model
from rewardsmith.rl.sb3.vec_reward import ContractRewardVecEnv, InProcessReward, make_vec_env
from rewardsmith.sandbox.types import Sandbox
from tests.sandbox.bad_reward_kit import LIMITS, OK_RETURN, expect
from tests.sandbox.bad_reward_kit import reward as reward_module
from tests.sandbox.fake_reward_host import fake_reward

CARTPOLE = load_task("cartpole")
N_ENVS = 4


def rollout_buffer(source: str, defer: bool) -> tuple[np.ndarray, ...]:
    """Three PPO rollouts on CartPole with VecNormalize (which scales rewards), the reward in
    its own process; the last rollout's rewards, returns and advantages."""
    job = make_job(CARTPOLE, steps=None, seed=5)
    job.normalize_obs, job.n_envs = True, N_ENVS
    with RewardProcess(source, "r.py", CARTPOLE.schema.names) as reward:
        contract = ContractRewardVecEnv(make_vec_env(CARTPOLE, N_ENVS, 5), reward, defer=defer)
        extra = deferred_ppo_kwargs(contract, N_ENVS, 0.99, scale_rewards=True) if defer else {}
        env = VecNormalize(contract, gamma=0.99, norm_reward=not defer)
        model = build_model(job, env, **extra)
        model.learn(total_timesteps=3 * model.n_steps * N_ENVS)
        buffer = model.rollout_buffer
        return buffer.rewards.copy(), buffer.returns.copy(), buffer.advantages.copy()


@pytest.mark.slow
def test_ppo_learns_the_same_from_rewards_taken_once_per_rollout() -> None:
    # A reward that varies with the state, so scaling and bootstrapping have something to do.
    source = textwrap.dedent(
        """\
        import numpy as np

        def compute_reward(state, action, next_state):
            upright = 1.0 - np.abs(next_state.pole_angle)
            return upright, {"upright": upright}
        """
    )
    step_by_step = rollout_buffer(source, defer=False)
    deferred = rollout_buffer(source, defer=True)
    for expected, got in zip(step_by_step, deferred, strict=True):
        np.testing.assert_array_equal(got, expected)
    assert np.ptp(deferred[0]) > 0  # the rewards were real, not the placeholder zeros


# Fails once the pole has tilted past 0.1 rad in any environment: on some step mid-rollout.
FAILS_WHEN_TILTED = textwrap.dedent(
    """\
    import numpy as np

    def compute_reward(state, action, next_state):
        if np.abs(next_state.pole_angle).max() > 0.1:
            raise ValueError("tilted")
        value = np.ones(len(action))
        return value, {"one": value}
    """
)


def deferred_env(
    source: str, tmp_path: Path, remote: bool = True, defer: bool = True
) -> ContractRewardVecEnv:
    if remote:
        reward: RewardProcess | InProcessReward = RewardProcess(
            source, "r.py", CARTPOLE.schema.names
        )
    else:
        path = tmp_path / "r.py"
        path.write_text(source)
        reward = InProcessReward(load_reward(path), str(path))
    env = ContractRewardVecEnv(make_vec_env(CARTPOLE, N_ENVS, 0), reward, defer=defer)
    env.reset()
    return env


def steps(env: ContractRewardVecEnv, count: int) -> None:
    for _ in range(count):
        _, rewards, _, _ = env.step(np.zeros(N_ENVS, dtype=np.int64))
        assert not rewards.any()  # placeholders until the rollout's end


def test_a_failing_batch_names_the_steps_it_held(tmp_path: Path) -> None:
    """The batch is one call on all transitions; when it fails, the error names the steps of
    that call (the reward is not run again step by step to find the one that failed), and they
    hold the step at which the step-by-step path (here: the reward in this process) fails."""
    step_by_step = deferred_env(FAILS_WHEN_TILTED, tmp_path, remote=False, defer=False)
    with pytest.raises(RewardError) as expected:
        for _ in range(30):
            step_by_step.step(np.zeros(N_ENVS, dtype=np.int64))
    step_by_step.close()
    env = deferred_env(FAILS_WHEN_TILTED, tmp_path)
    steps(env, 30)
    with pytest.raises(RewardError) as caught:
        env.take_totals()
    error = caught.value
    assert error.category == ErrorCategory.RUNTIME_ERROR and "tilted" in error.message
    assert f"the 30 x {N_ENVS} transitions of steps {N_ENVS} to {30 * N_ENVS}" in error.message
    assert error.step == N_ENVS  # the first step of the call that failed
    assert error.traceback and "tilted" in error.traceback
    assert expected.value.step is not None and N_ENVS < expected.value.step <= 30 * N_ENVS
    env.close()


# Fails on any batch larger than one vectorised step; counts its calls in what it returns.
FAILS_ON_BATCHES = textwrap.dedent(
    f"""\
    import numpy as np
    calls = [0]

    def compute_reward(state, action, next_state):
        calls[0] += 1
        if len(action) > {N_ENVS}:
            raise MemoryError("a batch of %d" % len(action))
        value = np.full(len(action), float(calls[0]))
        return value, {{"calls": value}}
    """
)


def test_a_reward_that_fails_on_a_batch_fails_with_its_error_and_runs_once(
    tmp_path: Path,
) -> None:
    """Issue 30: the failing batch was retried step by step and, where every step passed, its
    error swallowed: the candidate trained as `ok`. It now fails with the batch's error, and
    the failing reward is not run a second time."""
    env = deferred_env(FAILS_ON_BATCHES, tmp_path)
    steps(env, 3)
    with pytest.raises(RewardError) as caught:
        env.take_totals()
    error = caught.value
    assert error.category == ErrorCategory.MEMORY_LIMIT and "a batch of 12" in error.message
    batch = StateBatch({name: np.zeros(N_ENVS) for name in CARTPOLE.schema.names})
    reward = env._reward
    total, _ = reward(batch, np.zeros(N_ENVS, dtype=np.int64), batch, None)
    assert total.tolist() == [2.0] * N_ENVS  # its second call: the batch was its only other
    env.close()


@pytest.mark.slow
def test_a_candidate_whose_reward_fails_on_rollout_batches_fails(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """End to end: it trained as `ok` when the batch's error was swallowed (issue 30). The
    rollout is 128 steps x 8 environments; a CartPole episode (a checkpoint's call) is at most
    500 steps, and single steps are 8."""
    job = make_job(CARTPOLE, steps=1024, seed=0)
    job.eval_episodes, job.n_checkpoints = 2, 2
    job.hyperparams = {**job.hyperparams, "n_steps": 128}
    body = "    if len(action) > 600:\n        raise MemoryError('a batch of %d' % len(action))\n"
    source = reward_module(body + OK_RETURN)
    outcome = train_reward(CARTPOLE, job, source, tmp_path, sandbox, LIMITS)
    error = expect(outcome, ErrorCategory.MEMORY_LIMIT)
    assert "a batch of 1024" in error.message and "steps 8 to 1024" in error.message


def test_totals_beyond_float32_are_a_nonfinite_reward(tmp_path: Path) -> None:
    """Issue 30: every total finite in float64 (1e39, or 1e308 whose sum overflows), but not in
    float32, which training uses: a named error, not a traceback or a silent inf."""
    source = textwrap.dedent(
        """\
        import numpy as np

        def compute_reward(state, action, next_state):
            value = np.full(len(action), 1e39)
            return value, {"huge": value}
        """
    )
    env = deferred_env(source, tmp_path)
    steps(env, 3)
    with pytest.raises(RewardError) as caught:
        env.take_totals()
    assert caught.value.category == ErrorCategory.NONFINITE_REWARD
    assert "beyond float32" in caught.value.message and caught.value.step == N_ENVS
    env.close()


def test_a_field_first_read_mid_rollout_is_sent_for_every_step(tmp_path: Path) -> None:
    """The learner keeps every step's states, so a field the reward starts reading only once
    the pole has tilted is sent for the whole rollout, and the totals match the in-process
    reward's."""
    source = textwrap.dedent(
        """\
        import numpy as np

        def compute_reward(state, action, next_state):
            value = 1.0 + next_state.pole_angle
            tilted = np.abs(next_state.pole_angle) > 0.05
            if tilted.any():
                value = value + np.where(tilted, state.cart_velocity, 0.0)
            return value, {"v": value}
        """
    )
    remote, local = deferred_env(source, tmp_path), deferred_env(source, tmp_path, remote=False)
    steps(remote, 20)
    steps(local, 20)
    totals, episode_ends = remote.take_totals()
    expected, _ = local.take_totals()
    assert totals.shape == (20, N_ENVS) and episode_ends.shape == (20, N_ENVS)
    np.testing.assert_allclose(totals, expected, rtol=1e-6)
    reward = remote._reward
    assert isinstance(reward, RewardProcess)
    assert sorted(reward.wanted) == ["cart_velocity", "pole_angle"]
    remote.close()
    local.close()


def _totals_frame(values: list[float]) -> bytes:
    return b"T" + struct.pack(f"={len(values)}d", *values)


@pytest.mark.parametrize(
    ("replies", "category", "says"),
    [
        ([_totals_frame([1.0] * 3)], ErrorCategory.SANDBOX_DIED, "totals of 24 bytes"),
        (
            [_totals_frame([1.0] * 2 * N_ENVS + [float("nan")] + [1.0] * (N_ENVS - 1))],
            ErrorCategory.NONFINITE_REWARD,
            "not finite",
        ),
        (
            [_totals_frame([1.0] * 2 * N_ENVS + [1e308] * N_ENVS)],
            ErrorCategory.NONFINITE_REWARD,
            "beyond float32",
        ),
        ([b"R\x00\x00\x00\x00"], ErrorCategory.SANDBOX_DIED, "undeclared component names"),
    ],
    ids=["short", "nan", "overflow", "result-for-a-batch"],
)
def test_hostile_totals_are_named(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    replies: list[bytes],
    category: ErrorCategory,
    says: str,
) -> None:
    fake_reward(tmp_path, replies, monkeypatch)
    env = deferred_env("", tmp_path)
    steps(env, 3)
    with pytest.raises(RewardError) as caught:
        env.take_totals()
    assert caught.value.category == category and says in caught.value.message
    if category == ErrorCategory.NONFINITE_REWARD:
        assert caught.value.step == 3 * N_ENVS  # the third step's row holds the NaN
    env.close()
