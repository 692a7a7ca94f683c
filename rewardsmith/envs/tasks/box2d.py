"""Box2D tasks: LunarLander."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rewardsmith.envs.adapter import Episode, TaskAdapter, TrainingDefaults
from rewardsmith.envs.schema import Field, StateSchema


class LunarLander(TaskAdapter):
    """LunarLander-v3: fields recomputed in float64 from the Box2D bodies; fitness is the
    environment's own episode score."""

    id = "lunarlander"
    env_id = "LunarLander-v3"
    goal = (
        "Land a lunar lander gently on the landing pad between the two flags, using its main "
        "engine and two side engines. Come to rest upright on both legs without crashing or "
        "flying off the screen, and use little fuel."
    )
    schema = StateSchema(
        (
            Field(
                "x_position",
                "horizontal position; the pad centre is 0, the screen edges +-1",
                "screen halves",
            ),
            Field("y_position", "height above the pad", "screen halves"),
            Field("x_velocity", "horizontal velocity", "screen halves per 50 steps"),
            Field(
                "y_velocity",
                "vertical velocity, negative when falling",
                "screen halves per 50 steps",
            ),
            Field("angle", "tilt from upright", "rad"),
            Field("angular_velocity", "tilt rate", "rad per 2.5 steps"),
            Field("left_leg_contact", "1.0 while the left leg touches the ground, else 0.0"),
            Field("right_leg_contact", "1.0 while the right leg touches the ground, else 0.0"),
            Field(
                "crashed",
                "1.0 once the lander's body touched the ground, else 0.0",
                reveals_outcome=True,
            ),
            Field(
                "at_rest",
                "1.0 once the lander has come to rest (stopped moving), else 0.0",
                reveals_outcome=True,
            ),
        )
    )
    fitness_description = "the standard LunarLander score of the episode (200 or more is solved)"
    success_description = "the lander came to rest without crashing"
    training = TrainingDefaults(
        algo="ppo",
        steps=300_000,
        n_envs=16,
        # The human reward lands on some seeds and crashes on others at this budget (3 of 9
        # seeds, -198 to 176): with two seeds per arm no reward can be told better than it
        # beyond the noise (docs/benchmarks.md, "What a single run delivers").
        eval_seeds=6,
        hyperparams={
            "ppo": {
                "n_steps": 1024,
                "batch_size": 64,
                "gae_lambda": 0.98,
                "gamma": 0.999,
                "n_epochs": 4,
                "ent_coef": 0.01,
            }
        },
    )

    @override
    def state_vector(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        from gymnasium.envs.box2d import lunar_lander as ll

        lander_env: Any = env.unwrapped
        lander = lander_env.lander
        half_w = ll.VIEWPORT_W / ll.SCALE / 2
        half_h = ll.VIEWPORT_H / ll.SCALE / 2
        pos, vel = lander.position, lander.linearVelocity
        # Recomputed in float64 from the simulator, as the environment does before it rounds the
        # observation to float32; the shipped reward is defined on these values.
        return np.array(
            (
                (pos.x - half_w) / half_w,
                (pos.y - (lander_env.helipad_y + ll.LEG_DOWN / ll.SCALE)) / half_h,
                vel.x * half_w / ll.FPS,
                vel.y * half_h / ll.FPS,
                lander.angle,
                20.0 * lander.angularVelocity / ll.FPS,
                1.0 if lander_env.legs[0].ground_contact else 0.0,
                1.0 if lander_env.legs[1].ground_contact else 0.0,
                1.0 if lander_env.game_over else 0.0,
                0.0 if lander.awake else 1.0,
            ),
            dtype=np.float64,
        )

    @override
    def fitness(self, episode: Episode) -> float:
        return float(np.sum(episode.env_rewards))

    @override
    def success(self, episode: Episode) -> bool:
        return bool(episode.states["at_rest"][-1] > 0 and episode.states["crashed"][-1] == 0)
