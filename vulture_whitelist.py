"""Names vulture reports as unused although they are used where it cannot see.

Plain `vulture` from the repository root reads this file with the package (`[tool.vulture]` in
pyproject.toml). Vulture matches by name, so each line below keeps one name alive everywhere:
list only names that are really used, one group per reason, and never a wildcard.
Typer commands are kept by `ignore_decorators` in pyproject.toml instead.
"""

# Vulture's whitelist format is bare attribute reads of `_`, each of which ruff calls useless.
# ruff: noqa: B018

from vulture.whitelists.whitelist_utils import Whitelist

_ = Whitelist()

# The reward contract's entry point: reward files are read as text and executed, then
# `compute_reward` is looked up in the module dict (envs/adapter.py reward_source,
# envs/task_file.py, reward/loader.py, programs/jax_contract.py).
_.compute_reward  # envs/rewards/*.py, envs/examples/*.py

# Task adapters named only in "module:Class" entry-point strings (envs/registry.py), imported by
# getattr when the task is loaded.
_.CartPole  # envs/tasks/classic.py
_.Acrobot  # envs/tasks/classic.py
_.MountainCarContinuous  # envs/tasks/classic.py
_.Pendulum  # envs/tasks/classic.py
_.LunarLander  # envs/tasks/box2d.py
_.HalfCheetah  # envs/tasks/mujoco.py
_.Hopper  # envs/tasks/mujoco.py
_.Walker2d  # envs/tasks/mujoco.py
_.Ant  # envs/tasks/mujoco.py
_.Humanoid  # envs/tasks/mujoco.py
_.FetchReach  # envs/tasks/robotics.py
_.FetchPush  # envs/tasks/robotics.py
_.FetchPickAndPlace  # envs/tasks/robotics.py
_.HandBlockRotateZ  # envs/tasks/robotics.py
_.Reach  # envs/tasks/metaworld.py
_.ButtonPress  # envs/tasks/metaworld.py
_.DrawerClose  # envs/tasks/metaworld.py
_.DoorClose  # envs/tasks/metaworld.py
_.DoorUnlock  # envs/tasks/metaworld.py
_.DrawerOpen  # envs/tasks/metaworld.py
_.HandlePress  # envs/tasks/metaworld.py
_.HandlePressSide  # envs/tasks/metaworld.py
_.WindowClose  # envs/tasks/metaworld.py
_.WindowOpen  # envs/tasks/metaworld.py
_.SweepInto  # envs/tasks/metaworld.py
_.PickPlace  # envs/tasks/metaworld.py
_.Line  # envs/tasks/line.py (the unlisted test task)

# MJX models named by class-name strings (rl/jax/brax_env.py GYMNASIUM_MODELS, via getattr).
_.GymnasiumAnt  # rl/jax/gymnasium_mjx.py
_.GymnasiumHumanoid  # rl/jax/gymnasium_mjx.py

# Dataclass fields only written here, read back through `asdict` / `to_dict` into run records and
# JSON (llm_calls, preference.json) and from there by the index, templates, views and tests.
_.cost_known  # eureka_loop/llm.py LLMCall
_.latency_s  # eureka_loop/llm.py LLMCall (runs/index.py LLM_CALL_FIELDS column)
_.response_id  # eureka_loop/llm.py LLMCall
_.pairwise_return  # eureka_loop/preference.py Assessment
_.pairwise_per_step  # eureka_loop/preference.py Assessment (prompts/preference_feedback.j2)
_.tpe_card  # eureka_loop/preference.py Assessment
_.tpe_card_per_step  # eureka_loop/preference.py Assessment
_.n_pairs  # eureka_loop/preference.py Assessment

# Dataclass fields read by name with getattr (rl/jax/budgets.py PPOConfig.train_kwargs), then
# passed to Brax's ppo.train as keyword arguments.
_.num_updates_per_batch
_.learning_rate
_.entropy_cost
_.discounting
_.gae_lambda
_.clipping_epsilon
_.reward_scaling
_.max_grad_norm

# TypedDict keys read and written with string subscripts (eureka_loop/state.py LoopState).
_.history  # selection.py returns {"history": [...]}, runner.py and commands/run.py read it

# Attributes of other libraries' objects, set to configure them: numpy arrays' read-only flag,
# sqlite3 rows as mappings, tar member headers, MuJoCo's solver, litellm's start-up banner.
_.writeable  # ndarray.flags.writeable: envs/schema.py, envs/obs_layout.py, rl/reward_wire.py
_.row_factory  # sqlite3.Connection: runs/index.py, runs/views.py
_.mtime  # tarfile.TarInfo: sandbox/docker/image.py
_.mode  # tarfile.TarInfo: sandbox/docker/image.py
_.linkname  # tarfile.TarInfo: sandbox/docker/image.py
_.solver  # mujoco.MjModel.opt: rl/jax/gymnasium_mjx.py
_.suppress_debug_info  # litellm module flag: eureka_loop/llm.py

# Hooks and parameters that other code calls by name: the protocol fixes them.
_._on_step  # stable_baselines3 BaseCallback hook: programs/train_sb3.py
_.memo  # copy.deepcopy's __deepcopy__(memo): envs/schema.py FieldRecord
_.exc_type  # the context-manager __exit__(exc_type, exc, tb): runs/store.py Run
_.randomization_fn  # Brax's ppo.train passes it to wrap_env_fn by keyword: rl/jax/env.py

# Public methods of the state objects that only the tests call (tests/ is outside vulture's paths).
_.validate  # envs/schema.py StateSchema: tests/envs/test_schema.py
_.as_dict  # envs/schema.py StateBatch: tests/envs/test_schema.py, tests/envs/test_task_file.py

# TypedDict keys read and written only as dict items.
_.confirm_fitness  # eureka_loop/state.py CandidateSummary: eureka_loop/selection.py

# Enum members chosen by their value (Typer parses `--sandbox docker` into the member; records read
# back through the enum's constructor): rewardsmith/choices.py.
_.PROCESS
_.DOCKER
_.NONE
_.RAY

# Typer reads a command's parameters from `__signature__` (commands/run_options.py).
_.__signature__

# The hostile-video check on its own (keep_video checks and copies); tests check kept videos.
_.check_video  # sandbox/video_file.py

# The judging page (rewardsmith/judging/): uvicorn reads `should_exit` in its serve loop, and each
# stored choice's `at` is its record's time, read by whoever audits the judgements file.
_.should_exit  # judging/server.py JudgingServer.stop
_.at  # runs/judgements.py Judgement
