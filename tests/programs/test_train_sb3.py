"""The training worker: the reward's own names become plain TensorBoard tags, and checkpoints act
as the learner does, in numpy where the evaluator would."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from stable_baselines3.common.vec_env import VecNormalize

from rewardsmith.envs import load_task
from rewardsmith.jobs.training import make_job
from rewardsmith.programs.train_sb3 import ReflectionCallback, tensorboard_tag
from rewardsmith.rl.sb3.policy_io import build_model
from rewardsmith.rl.sb3.vec_reward import make_vec_env


def test_a_reward_terms_name_becomes_a_plain_bounded_tag() -> None:
    assert tensorboard_tag("upright") == "reward_terms/upright"
    # The candidate names its terms: no path separators, escapes or bidi overrides reach the log.
    hostile = tensorboard_tag("../../x/\u202e\x1b[2J" + "a" * 500)
    assert hostile.startswith("reward_terms/.._.._x_") and len(hostile) == len("reward_terms/") + 64
    assert set(hostile.removeprefix("reward_terms/")) <= set("._-x2Ja_")


@pytest.mark.parametrize(
    ("task_id", "algo", "hyperparams", "in_numpy"),
    [
        ("cartpole", "ppo", {}, True),
        ("pendulum", "sac", {"learning_starts": 10}, True),
        # gSDE's SAC action is not covered by the numpy actor: SB3's predict gives it.
        ("pendulum", "sac", {"learning_starts": 10, "use_sde": True}, False),
    ],
)
def test_checkpoints_act_as_the_learner_does(
    task_id: str, algo: str, hyperparams: dict[str, Any], in_numpy: bool, tmp_path: Path
) -> None:
    adapter = load_task(task_id)
    job = replace(
        make_job(adapter, steps=256, seed=1), algo=algo, n_envs=1, hyperparams=hyperparams
    )
    env = VecNormalize(make_vec_env(adapter, 1, 1))
    model = build_model(job, env)
    with torch.no_grad():  # weights away from the initial ones, so the actions differ
        for parameter in model.policy.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    rng = np.random.default_rng(0)
    obs = rng.normal(scale=3.0, size=(128, *env.observation_space.shape)).astype(np.float32)
    env.obs_rms.mean, env.obs_rms.var = (
        rng.normal(size=obs.shape[1:]),
        rng.uniform(1, 4, obs.shape[1:]),
    )
    expected = model.predict(env.normalize_obs(obs), deterministic=True)[0]
    callback = ReflectionCallback(adapter, job, tmp_path, reward=None)
    callback.init_callback(model)

    policy = callback.policy()
    if in_numpy:  # the learner is not asked at all
        model.predict = None  # type: ignore[method-assign,assignment]
    got = policy(obs)

    assert got.shape == expected.shape and len(np.unique(got)) > 1
    # float32 sums in another order (tests/rl/sb3/test_actor.py): 1e-4 of an action.
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
