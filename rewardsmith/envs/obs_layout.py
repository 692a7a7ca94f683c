"""State fields read straight from the observation and the step info, for one env or a batch.

Where every field of a task is an observation entry or a step-info value (HalfCheetah, Hopper;
every user task file), training reads the state of all N environments from the already-stacked
observations and infos, and only the fields reward code reads, instead of asking each
environment for its state on every step. The same sources give one environment's state vector,
so both paths give the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewardsmith.envs.schema import StateSchema


@dataclass(frozen=True)
class FromObs:
    """A field that is observation entries: one index for a scalar field, d for a vector."""

    field: str
    indices: tuple[int, ...]


@dataclass(frozen=True)
class FromInfo:
    """A scalar field that is a step-info value; where the info lacks it (after a reset, most
    envs report fewer keys) the observation entry `fallback_index`, else `default`, stands in."""

    field: str
    key: str
    fallback_index: int | None = None
    default: float = 0.0


class ObservationLayout:
    """Where each field of a schema comes from, compiled into index arrays for fast gathers."""

    def __init__(self, schema: StateSchema, sources: Sequence[FromObs | FromInfo]) -> None:
        by_field = {source.field: source for source in sources}
        if set(by_field) != set(schema.names) or len(by_field) != len(sources):
            raise ValueError(f"sources must name each of {schema.names} once, got {list(by_field)}")
        self.size = schema.size
        destination, origin = [], []
        self._info: list[tuple[int, FromInfo]] = []
        for name, slot in schema.layout.items():
            source = by_field[name]
            columns = [slot] if isinstance(slot, int) else list(range(slot.start, slot.stop))
            if isinstance(source, FromObs):
                if len(source.indices) != len(columns):
                    raise ValueError(
                        f"{name} has {len(columns)} values but {len(source.indices)} indices"
                    )
                destination += columns
                origin += list(source.indices)
            else:
                if not isinstance(slot, int):
                    raise ValueError(f"{name} is a vector field; info values are scalars")
                self._info.append((slot, source))
        self._copies = _runs(destination, origin)
        self._by_field = {name: _compiled(by_field[name]) for name in schema.names}

    def row(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """One environment's flat state vector."""
        row = np.empty(self.size)
        for destination, origin in self._copies:
            row[destination] = obs[origin]
        for column, source in self._info:
            row[column] = _info_value(source, info, obs)
        return row

    def fields(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> ObservedFields:
        """N environments' fields over their stacked observations and their infos, each gathered
        when first read. `obs` is copied once (as float64, read-only): fields are views of it."""
        frozen = np.array(obs, dtype=np.float64)
        frozen.flags.writeable = False
        return ObservedFields(self._by_field, frozen, infos)


class ObservedFields:
    """A `FieldSource`: one field at a time from stacked observations and per-env infos."""

    __slots__ = ("_by_field", "_infos", "_obs")

    def __init__(
        self,
        by_field: dict[str, slice | list[int] | int | FromInfo],
        obs: np.ndarray,
        infos: Sequence[dict[str, Any]],
    ) -> None:
        self._by_field, self._obs, self._infos = by_field, obs, infos

    def field(self, name: str) -> np.ndarray:
        """The field's `[N]` / `[N, d]` array: a view of the observations, or the info values
        (each environment's fallback standing in where its info lacks the key)."""
        source = self._by_field[name]
        if not isinstance(source, FromInfo):
            return self._obs[:, source]
        key = source.key
        try:  # after a step every info normally has the key
            return np.array([info[key] for info in self._infos], dtype=np.float64)
        except KeyError:  # after a reset it may not: the fallback stands in
            return np.array(
                [_info_value(source, info, self._obs[i]) for i, info in enumerate(self._infos)],
                dtype=np.float64,
            )


def _info_value(source: FromInfo, info: dict[str, Any], obs: np.ndarray) -> Any:
    """One environment's info value, else its observation entry `fallback_index`, else default."""
    if source.key in info:
        return info[source.key]
    return source.default if source.fallback_index is None else obs[source.fallback_index]


def _compiled(source: FromObs | FromInfo) -> slice | list[int] | int | FromInfo:
    """How to take a field from `[N, obs]`: a column (scalar), a slice (a run), or indices."""
    if isinstance(source, FromInfo):
        return source
    indices = list(source.indices)
    if len(indices) == 1:
        return indices[0]
    if indices == list(range(indices[0], indices[0] + len(indices))):
        return slice(indices[0], indices[-1] + 1)
    return indices


def _runs(destination: list[int], origin: list[int]) -> list[tuple[slice, slice]]:
    """Index pairs merged into runs where both sides advance together: slice copies are far
    cheaper than fancy indexing on the small arrays of every step."""
    runs: list[tuple[slice, slice]] = []
    start = 0
    for i in range(1, len(destination) + 1):
        if i == len(destination) or (destination[i], origin[i]) != (
            destination[i - 1] + 1,
            origin[i - 1] + 1,
        ):
            runs.append(
                (
                    slice(destination[start], destination[i - 1] + 1),
                    slice(origin[start], origin[i - 1] + 1),
                )
            )
            start = i
    return runs
