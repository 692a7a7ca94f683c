"""User task files: target any installed Gymnasium environment with a small declarative TOML file.

A task file names the environment, states the goal, maps observation entries (or step-info values)
to named state fields, and picks a fitness and success rule from a fixed menu. Nothing in it is
executed: the orchestrator only parses it, so a task file is as safe to load as a JSON document.
Reward files it names are read as text and only ever run inside the sandboxed worker.

See docs/task_files.md for the format; `rewardsmith/envs/examples/` holds working examples.
"""

from __future__ import annotations

import difflib
import keyword
import tomllib
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rewardsmith.envs.adapter import Episode, RewardKind, TaskAdapter, TrainingDefaults
from rewardsmith.envs.goal_dict import goal_indices, is_goal_dict
from rewardsmith.envs.obs_layout import FromInfo, FromObs, ObservationLayout
from rewardsmith.envs.schema import Field, StateBatch, StateSchema

TOP_LEVEL_KEYS = (
    "env_id",
    "id",
    "goal",
    "make_kwargs",
    "fields",
    "fitness",
    "success",
    "human_reward",
    "sparse_reward",
    "training",
)
FIELD_KEYS = (
    "key",
    "index",
    "indices",
    "info_key",
    "default",
    "description",
    "units",
    "reveals_outcome",
)
FIELD_SOURCES = ("index", "indices", "info_key")
# Fitness kinds: whether each needs a scalar `field`, and the default text shown to users.
FITNESS_KINDS: dict[str, tuple[bool, str]] = {
    "episode_length": (False, "episode length in steps"),
    "episode_return": (False, "the environment's own episode return"),
    "final_minus_initial": (True, "change in {field} over the episode (last minus first)"),
    "max": (True, "highest {field} reached in the episode"),
    "mean": (True, "mean {field} over the episode's steps"),
    "final": (True, "{field} at the end of the episode"),
}
SUCCESS_KINDS: dict[str, str] = {
    "truncated": "the episode ran to its time limit without terminating",
    "terminated": "the episode terminated (the environment's goal condition)",
    "fitness_at_least": "the fitness reached {threshold:g}",
}
TRAINING_KEYS = (
    "algo",
    "steps",
    "n_envs",
    "normalize_obs",
    "eval_episodes",
    "eval_seeds",
    "hyperparams",
)
ALGOS = ("ppo", "sac")
# Set by the worker itself; a task file may not override them.
_RESERVED_HYPERPARAMS = frozenset(
    {"policy", "env", "seed", "verbose", "device", "_init_setup_model"}
)
# Names reward code could not reach as `state.<name>` because StateBatch already defines them.
_RESERVED_FIELD_NAMES = frozenset(name for name in dir(StateBatch) if not name.startswith("__"))


class TaskFileError(ValueError):
    """A mistake in a task file; the message names the file, the key, and what to do."""

    def __init__(self, path: Path, key: str, problem: str) -> None:
        self.path, self.key, self.problem = path, key, problem
        super().__init__(f"task file {path}: {key}: {problem}")


class FileTask(TaskAdapter):
    """A task described by a TOML file; built only by `load_task_file`."""

    def __init__(
        self,
        *,
        source_path: Path,
        task_id: str,
        env_id: str,
        goal: str,
        make_kwargs: dict[str, Any],
        schema: StateSchema,
        sources: tuple[FromObs | FromInfo, ...],
        stackable_obs: bool,
        fitness_rule: tuple[str, str | None],
        fitness_description: str,
        success_rule: tuple[str, float | None] | None,
        success_description: str | None,
        reward_paths: dict[str, Path],
        training: TrainingDefaults,
    ) -> None:
        self.source_path = source_path
        self.id = task_id
        self.env_id = env_id
        self.goal = goal
        self.make_kwargs = make_kwargs
        self.schema = schema
        self.fitness_description = fitness_description
        self.success_description = success_description
        self.training = training
        self._layout = ObservationLayout(schema, sources)
        # Every field is an observation entry or an info value, so training can read them for
        # all environments at once from the stacked observations (a flat Box is stackable).
        self.obs_layout = self._layout if stackable_obs else None
        self._fitness_kind, self._fitness_field = fitness_rule
        self._success_rule = success_rule
        self._reward_paths = reward_paths

    @property
    def fitness_rule(self) -> tuple[str, str | None]:
        """The fitness kind and its field, as the file gives them (the offline designer reads it)."""
        return self._fitness_kind, self._fitness_field

    @property
    def success_rule(self) -> tuple[str, float | None] | None:
        """The success kind and its threshold, or None without a [success] table."""
        return self._success_rule

    @override
    def state_vector(self, env: gym.Env, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return self._layout.row(obs, info)

    def fitness(self, episode: Episode) -> float:
        """From episode data only: its length, the env's own rewards, or a state field."""
        kind = self._fitness_kind
        if kind == "episode_length":
            return float(episode.length)
        if kind == "episode_return":
            return float(np.sum(episode.env_rewards))
        values = episode.states[self._fitness_field]  # type: ignore[index]
        if kind == "final_minus_initial":
            return float(values[-1] - values[0])
        if kind == "max":
            return float(np.max(values))
        if kind == "mean":
            return float(np.mean(values[1:] if len(values) > 1 else values))
        return float(values[-1])

    @override
    def success(self, episode: Episode) -> bool | None:
        if self._success_rule is None:
            return None
        kind, threshold = self._success_rule
        if kind == "truncated":
            return episode.truncated and not episode.terminated
        if kind == "terminated":
            return episode.terminated
        return self.fitness(episode) >= threshold  # type: ignore[operator]

    def reward_source(self, kind: RewardKind) -> str | None:
        """The text of the file named by `human_reward`/`sparse_reward`; None when not given.

        None for `human` means "train on the environment's own reward". The path is resolved here,
        in the orchestrator, because the worker only sees a copy of the task file.
        """
        path = self._reward_paths.get(kind)
        if path is None:
            return None
        if not path.is_file():
            raise TaskFileError(
                self.source_path,
                f"{kind}_reward",
                f"reward file {path} does not exist; paths are relative to the task file's folder",
            )
        return path.read_text()

    @override
    def describe(self) -> dict[str, Any]:
        described = super().describe()
        described["source"] = str(self.source_path)
        for kind in ("human", "sparse"):
            path = self._reward_paths.get(kind)
            described[f"{kind}_reward"] = str(path) if path is not None else None
        return described


def load_task_file(path: Path) -> FileTask:
    """Parse and check a task file; every mistake raises a TaskFileError (a ValueError)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"task file {path} does not exist")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise TaskFileError(path, "(syntax)", f"not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise TaskFileError(path, "(encoding)", "the file is not UTF-8 text") from None
    _check_keys(path, "(top level)", data, TOP_LEVEL_KEYS)

    env_id = _require_str(
        path, data, "env_id", 'the Gymnasium id to target, e.g. env_id = "CartPole-v1"'
    )
    task_id = _task_id(path, data)
    goal = _require_str(path, data, "goal", "one paragraph saying what the agent should achieve")
    make_kwargs = _table(path, data, "make_kwargs")
    obs_space, info_keys = _probe_env(path, env_id, make_kwargs, needs_info=_uses_info(data))

    sources, schema = _parse_fields(path, data, obs_space, info_keys)
    fitness_rule, fitness_description = _parse_fitness(path, data, schema)
    success_rule, success_description = _parse_success(path, data)
    reward_paths = {
        kind: path.parent
        / _require_str(path, data, f"{kind}_reward", "a path to a reward .py file")
        for kind in ("human", "sparse")
        if f"{kind}_reward" in data
    }
    return FileTask(
        source_path=path,
        task_id=task_id,
        env_id=env_id,
        goal=" ".join(goal.split()),
        make_kwargs=make_kwargs,
        schema=schema,
        sources=sources,
        stackable_obs=_observation_dim(obs_space) is not None,
        fitness_rule=fitness_rule,
        fitness_description=fitness_description,
        success_rule=success_rule,
        success_description=success_description,
        reward_paths=reward_paths,
        training=_parse_training(path, data),
    )


def _check_keys(path: Path, where: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise TaskFileError(
                path,
                f"{where}.{key}" if where != "(top level)" else key,
                f"unknown key; {hint}allowed keys here: {', '.join(allowed)}",
            )


def _require_str(path: Path, table: dict[str, Any], key: str, what: str, where: str = "") -> str:
    name = f"{where}.{key}" if where else key
    if key not in table:
        raise TaskFileError(path, name, f'missing; add {key} = "..." ({what})')
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise TaskFileError(path, name, f"must be a non-empty string ({what}), got {value!r}")
    return value


def _table(path: Path, data: dict[str, Any], key: str, where: str = "") -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        name = f"{where}.{key}" if where else key
        raise TaskFileError(
            path, name, f"must be a table (e.g. [{name}] or {key} = {{...}}), got {value!r}"
        )
    return value


def _task_id(path: Path, data: dict[str, Any]) -> str:
    task_id = data.get("id", path.stem)
    if (
        not isinstance(task_id, str)
        or not task_id
        or not all(c.isalnum() or c in "-_." for c in task_id)
    ):
        raise TaskFileError(
            path,
            "id",
            f"{task_id!r} is not a usable id; use letters, digits, '-', '_' and '.' only",
        )
    return task_id


def _uses_info(data: dict[str, Any]) -> bool:
    fields = data.get("fields")
    return isinstance(fields, dict) and any(
        isinstance(f, dict) and "info_key" in f for f in fields.values()
    )


def _probe_env(
    path: Path, env_id: str, make_kwargs: dict[str, Any], needs_info: bool
) -> tuple[gym.Space[Any], set[str]]:
    """Create the environment once to learn its observation space (and step-info keys)."""
    from rewardsmith.envs.suites import SuiteMissingError, ensure_registered, missing_suites_hint

    try:
        ensure_registered(env_id)  # an optional suite's environment: import the suite
    except SuiteMissingError as exc:
        raise TaskFileError(path, "env_id", str(exc)) from None
    if ":" not in env_id and env_id not in gym.registry:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise TaskFileError(
            path,
            "env_id",
            f"{env_id!r} is not a registered Gymnasium environment.{hint} "
            "Install the package that provides it, or fix the id (see gymnasium.pprint_registry())."
            + missing_suites_hint(),
        )
    try:
        env = gym.make(env_id, **make_kwargs)
    except TypeError as exc:
        raise TaskFileError(path, "make_kwargs", f"{env_id} rejected them: {exc}") from None
    except gym.error.Error as exc:
        raise TaskFileError(
            path, "env_id", f"Gymnasium could not create {env_id!r}: {exc}"
        ) from None
    info_keys: set[str] = set()
    try:
        if needs_info:
            env.action_space.seed(0)
            _, reset_info = env.reset(seed=0)
            _, _, _, _, step_info = env.step(env.action_space.sample())
            info_keys = set(reset_info) | set(step_info)
        return env.observation_space, info_keys
    finally:
        env.close()


def _parse_fields(
    path: Path, data: dict[str, Any], obs_space: gym.Space[Any], info_keys: set[str]
) -> tuple[tuple[FromObs | FromInfo, ...], StateSchema]:
    tables = _table(path, data, "fields")
    if not tables:
        raise TaskFileError(
            path,
            "fields",
            "no state fields; add at least one [fields.<name>] table with `index` and "
            "`description`, so reward code has named state to read",
        )
    obs_dim = _observation_dim(obs_space)
    sources, fields = [], []
    for name, spec in tables.items():
        where = f"fields.{name}"
        _check_field_name(path, where, name)
        if not isinstance(spec, dict):
            raise TaskFileError(
                path, where, "must be a table with `index`, `description` and `units`"
            )
        _check_keys(path, where, spec, FIELD_KEYS)
        given = [key for key in FIELD_SOURCES if key in spec]
        if len(given) > 1 or (not given and "key" not in spec):
            raise TaskFileError(
                path,
                where,
                "give exactly one of index (an observation entry), indices (a list of entries, "
                "for a vector field) or info_key (a value from the step info); "
                f"got {given or 'none'}",
            )
        description = _require_str(
            path, spec, "description", "what the field means, for the reward designer", where
        )
        units = spec.get("units", "")
        if not isinstance(units, str):
            raise TaskFileError(
                path, f"{where}.units", f'must be a string such as "m/s", got {units!r}'
            )
        reveals_outcome = spec.get("reveals_outcome", False)
        if not isinstance(reveals_outcome, bool):
            raise TaskFileError(
                path,
                f"{where}.reveals_outcome",
                f"must be true or false, got {reveals_outcome!r}",
            )
        source, shape = _field_source(path, where, name, spec, obs_space, obs_dim, info_keys)
        if "default" in spec and isinstance(source, FromObs):
            raise TaskFileError(
                path, f"{where}.default", "only fields with info_key take a default; remove it"
            )
        sources.append(source)
        fields.append(Field(name, description.strip(), units, shape, reveals_outcome))
    return tuple(sources), StateSchema(tuple(fields))


def _observation_dim(obs_space: gym.Space[Any]) -> int | None:
    """The length of a flat Box observation (or of a goal dictionary, flattened as training
    sees it), or None when observation indices cannot be used."""
    if isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 1:
        return int(obs_space.shape[0])
    if is_goal_dict(obs_space):
        return gym.spaces.flatdim(obs_space)
    return None


def _check_field_name(path: Path, where: str, name: str) -> None:
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
        raise TaskFileError(
            path,
            where,
            f"{name!r} cannot be read as state.{name}; use a Python identifier such as "
            "pole_angle (letters, digits and underscores, not starting with one)",
        )
    if name in _RESERVED_FIELD_NAMES:
        raise TaskFileError(
            path, where, f"{name!r} is reserved by the state object; choose another name"
        )


def _field_source(
    path: Path,
    where: str,
    name: str,
    spec: dict[str, Any],
    obs_space: gym.Space[Any],
    obs_dim: int | None,
    info_keys: set[str],
) -> tuple[FromObs | FromInfo, tuple[int, ...]]:
    if "info_key" in spec:
        key = spec["info_key"]
        if not isinstance(key, str) or not key:
            raise TaskFileError(
                path, f"{where}.info_key", f"must be the name of a step-info entry, got {key!r}"
            )
        if key not in info_keys:
            known = ", ".join(sorted(info_keys)) or "none"
            raise TaskFileError(
                path,
                f"{where}.info_key",
                f"the environment's reset/step info has no {key!r}; "
                f"the keys it reports are: {known}",
            )
        default = spec.get("default", 0.0)
        if isinstance(default, bool) or not isinstance(default, int | float):
            raise TaskFileError(path, f"{where}.default", f"must be a number, got {default!r}")
        if "key" in spec:
            raise TaskFileError(
                path, f"{where}.key", "an info_key field reads the step info; remove key"
            )
        return FromInfo(name, key, default=float(default)), ()
    if is_goal_dict(obs_space):
        return _goal_field_source(path, where, name, spec, obs_space)
    if "key" in spec:
        raise TaskFileError(
            path,
            f"{where}.key",
            f"the observation space {obs_space} is not a dictionary; remove key and give index "
            "or indices into the observation",
        )
    if obs_dim is None:
        raise TaskFileError(
            path,
            where,
            f"the observation space {obs_space} is not a flat Box, so observation indices "
            "cannot be used; read the value with info_key instead",
        )
    if "index" in spec:
        return FromObs(name, (_check_index(path, f"{where}.index", spec["index"], obs_dim),)), ()
    checked = _check_indices(path, f"{where}.indices", spec["indices"], obs_dim)
    return FromObs(name, checked), (len(checked),)


def _goal_field_source(
    path: Path, where: str, name: str, spec: dict[str, Any], obs_space: gym.spaces.Dict
) -> tuple[FromObs, tuple[int, ...]]:
    """A field of a goal-dictionary observation: a whole entry (`key` alone, a vector field),
    or `index` / `indices` within it; mapped onto the flattened observation training sees."""
    keys = ", ".join(obs_space.spaces)
    key = spec.get("key")
    if key is None:
        raise TaskFileError(
            path,
            where,
            f"the observation is a dictionary with entries {keys}; name one with "
            'key = "..." (and index or indices within it, or neither for the whole entry)',
        )
    if key not in obs_space.spaces:
        raise TaskFileError(
            path, f"{where}.key", f"the observation has no entry {key!r}; its entries are {keys}"
        )
    size = gym.spaces.flatdim(obs_space.spaces[key])
    what = f"the observation's {key!r}"
    if "index" in spec:
        index = _check_index(path, f"{where}.index", spec["index"], size, what)
        return FromObs(name, goal_indices(obs_space, key, [index])), ()
    if "indices" in spec:
        within = _check_indices(path, f"{where}.indices", spec["indices"], size, what)
        return FromObs(name, goal_indices(obs_space, key, list(within))), (len(within),)
    return FromObs(name, goal_indices(obs_space, key, range(size))), (size,)


def _check_indices(
    path: Path, key: str, indices: Any, size: int, what: str = "the observation"
) -> tuple[int, ...]:
    if not isinstance(indices, list) or not indices:
        raise TaskFileError(
            path, key, f"must be a non-empty list of observation indices, got {indices!r}"
        )
    return tuple(_check_index(path, key, i, size, what) for i in indices)


def _check_index(
    path: Path, key: str, index: Any, obs_dim: int, what: str = "the observation"
) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise TaskFileError(path, key, f"must be an integer observation index, got {index!r}")
    if not 0 <= index < obs_dim:
        raise TaskFileError(
            path,
            key,
            f"index {index} is out of range: {what} has {obs_dim} entries (0 to {obs_dim - 1})",
        )
    return index


def _parse_fitness(
    path: Path, data: dict[str, Any], schema: StateSchema
) -> tuple[tuple[str, str | None], str]:
    if "fitness" not in data:
        raise TaskFileError(
            path,
            "fitness",
            "missing; add a [fitness] table with kind = one of " + ", ".join(FITNESS_KINDS),
        )
    spec = _table(path, data, "fitness")
    _check_keys(path, "fitness", spec, ("kind", "field", "description"))
    kind = _require_str(path, spec, "kind", "one of " + ", ".join(FITNESS_KINDS), "fitness")
    if kind not in FITNESS_KINDS:
        close = difflib.get_close_matches(kind, FITNESS_KINDS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise TaskFileError(
            path,
            "fitness.kind",
            f"unknown kind {kind!r}; {hint}choose one of {', '.join(FITNESS_KINDS)}",
        )
    needs_field, default_text = FITNESS_KINDS[kind]
    field = None
    if needs_field:
        field = _require_str(
            path, spec, "field", f"the scalar state field that {kind} is taken over", "fitness"
        )
        if field not in schema.names:
            raise TaskFileError(
                path,
                "fitness.field",
                f"no state field {field!r}; the fields are {', '.join(schema.names)}",
            )
        if schema[field].shape != ():
            raise TaskFileError(
                path, "fitness.field", f"{field!r} is a vector field; fitness needs a scalar field"
            )
    elif "field" in spec:
        raise TaskFileError(path, "fitness.field", f"kind {kind!r} uses no field; remove it")
    description = spec.get("description", default_text.format(field=field))
    if not isinstance(description, str):
        raise TaskFileError(path, "fitness.description", f"must be a string, got {description!r}")
    return (kind, field), description


def _parse_success(
    path: Path, data: dict[str, Any]
) -> tuple[tuple[str, float | None] | None, str | None]:
    if "success" not in data:
        return None, None
    spec = _table(path, data, "success")
    _check_keys(path, "success", spec, ("kind", "threshold", "description"))
    kind = _require_str(path, spec, "kind", "one of " + ", ".join(SUCCESS_KINDS), "success")
    if kind not in SUCCESS_KINDS:
        raise TaskFileError(
            path, "success.kind", f"unknown kind {kind!r}; choose one of {', '.join(SUCCESS_KINDS)}"
        )
    threshold = spec.get("threshold")
    if kind == "fitness_at_least":
        if threshold is None:
            raise TaskFileError(
                path, "success.threshold", "missing; fitness_at_least needs threshold = <number>"
            )
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise TaskFileError(path, "success.threshold", f"must be a number, got {threshold!r}")
    elif threshold is not None:
        raise TaskFileError(
            path, "success.threshold", f"kind {kind!r} uses no threshold; remove it"
        )
    description = spec.get("description", SUCCESS_KINDS[kind].format(threshold=threshold or 0.0))
    if not isinstance(description, str):
        raise TaskFileError(path, "success.description", f"must be a string, got {description!r}")
    return (kind, None if threshold is None else float(threshold)), description


def _parse_training(path: Path, data: dict[str, Any]) -> TrainingDefaults:
    spec = _table(path, data, "training")
    _check_keys(path, "training", spec, TRAINING_KEYS)
    defaults = TrainingDefaults()
    algo = spec.get("algo", defaults.algo)
    if algo not in ALGOS:
        raise TaskFileError(
            path, "training.algo", f"unknown algorithm {algo!r}; choose one of {', '.join(ALGOS)}"
        )
    counts = {}
    # SAC takes one gradient step per `n_envs` transitions: one environment unless the file says.
    unset = {"n_envs": 1} if algo == "sac" else {}
    for key in ("steps", "n_envs", "eval_episodes", "eval_seeds"):
        value = spec.get(key, unset.get(key, getattr(defaults, key)))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TaskFileError(
                path, f"training.{key}", f"must be a positive integer, got {value!r}"
            )
        counts[key] = value
    normalize_obs = spec.get("normalize_obs", defaults.normalize_obs)
    if not isinstance(normalize_obs, bool):
        raise TaskFileError(
            path, "training.normalize_obs", f"must be true or false, got {normalize_obs!r}"
        )
    return TrainingDefaults(
        algo=algo,
        normalize_obs=normalize_obs,
        hyperparams=_parse_hyperparams(path, _table(path, spec, "hyperparams", "training"), algo),
        **counts,
    )


def _parse_hyperparams(path: Path, spec: dict[str, Any], algo: str) -> dict[str, dict[str, Any]]:
    """Flat keys belong to `algo`; `[training.hyperparams.ppo]` / `.sac` sub-tables to that one."""
    per_algo: dict[str, dict[str, Any]] = {}
    for key, value in spec.items():
        if key in ALGOS and isinstance(value, dict):
            per_algo.setdefault(key, {}).update(value)
        else:
            per_algo.setdefault(algo, {})[key] = value
    if per_algo:
        _check_hyperparam_names(path, per_algo)
    return per_algo


def _check_hyperparam_names(path: Path, per_algo: dict[str, dict[str, Any]]) -> None:
    """Reject names the SB3 constructor would refuse, before a worker fails on them."""
    import inspect

    from stable_baselines3 import PPO, SAC

    classes = {"ppo": PPO, "sac": SAC}
    for algo, params in per_algo.items():
        accepted = set(inspect.signature(classes[algo]).parameters) - _RESERVED_HYPERPARAMS
        for key in params:
            if key not in accepted:
                close = difflib.get_close_matches(key, accepted, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise TaskFileError(
                    path,
                    f"training.hyperparams.{key}",
                    f"not a {algo.upper()} hyperparameter; {hint}"
                    f"see the Stable-Baselines3 {algo.upper()} documentation",
                )
