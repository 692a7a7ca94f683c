"""PPO's rewards for a whole rollout at once: one exchange with the reward process per rollout.

PPO needs a rollout's rewards only when it computes returns and advantages at the rollout's
end. So the training environments (`ContractRewardVecEnv(defer=True)`) return zero rewards and
keep each step's transition, and this buffer fetches the real rewards of all of them at that
point. What SB3 would have done with each step's reward is done here, in the same order:

- VecNormalize's reward scaling (`ReturnScaler`, the same running discounted-return statistics,
  updated step by step); the VecNormalize around the environments then scales no reward;
- the bootstrap SB3 adds to a reward where an episode was cut by its time limit is already in
  the buffer (added to the zero reward), so the real reward is added to it.

The buffer then holds what the step-by-step path would have given (to float32 rounding), and the
reward process is woken once per rollout instead of once per step (docs/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.running_mean_std import RunningMeanStd
from typing_extensions import override

from rewardsmith.rl.sb3.vec_reward import ContractRewardVecEnv


class ReturnScaler:
    """VecNormalize's reward normalisation (its defaults), applied to a rollout after the fact."""

    def __init__(
        self, n_envs: int, gamma: float, clip_reward: float = 10.0, epsilon: float = 1e-8
    ) -> None:
        self.ret_rms = RunningMeanStd(shape=())
        self.returns = np.zeros(n_envs)
        self.gamma, self.clip_reward, self.epsilon = gamma, clip_reward, epsilon

    def __call__(self, rewards: np.ndarray, dones: np.ndarray) -> np.ndarray:
        """Scaled rewards `[T, N]` (float32) for consecutive steps' rewards and episode ends."""
        scaled = np.empty(rewards.shape, dtype=np.float32)
        for t, (reward, done) in enumerate(zip(rewards, dones, strict=True)):
            self.returns = self.returns * self.gamma + reward
            self.ret_rms.update(self.returns)
            scale = np.sqrt(self.ret_rms.var + self.epsilon)
            scaled[t] = np.clip(reward / scale, -self.clip_reward, self.clip_reward)
            self.returns[done] = 0
        return scaled


class DeferredRewardRolloutBuffer(RolloutBuffer):
    """A RolloutBuffer that takes its rewards from the environments at the rollout's end."""

    def __init__(
        self,
        *args: Any,
        rewards: ContractRewardVecEnv,
        scaler: ReturnScaler | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.reward_source, self.scaler = rewards, scaler

    @override
    def compute_returns_and_advantage(self, last_values: torch.Tensor, dones: np.ndarray) -> None:
        totals, episode_ends = self.reward_source.take_totals()
        if totals.shape != self.rewards.shape:
            raise RuntimeError(
                f"{totals.shape[0]} steps' rewards pending for a rollout of {self.buffer_size}"
            )
        self.rewards += totals if self.scaler is None else self.scaler(totals, episode_ends)
        super().compute_returns_and_advantage(last_values, dones)


def deferred_ppo_kwargs(
    env: ContractRewardVecEnv, n_envs: int, gamma: float, scale_rewards: bool
) -> dict[str, Any]:
    """PPO's constructor arguments that make it take `env`'s rewards once per rollout."""
    scaler = ReturnScaler(n_envs, gamma) if scale_rewards else None
    return {
        "rollout_buffer_class": DeferredRewardRolloutBuffer,
        "rollout_buffer_kwargs": {"rewards": env, "scaler": scaler},
    }
