"""State fields read straight from the observation and the step info, for one env or a batch.

Where every field of a task is an observation entry or a step-info value (HalfCheetah; every user
task file), training can build the `[N, D]` state batch from the already-stacked observations
with one gather, instead of asking each environment for its state on every step. The same code
reads one environment's state, so both paths give the same values.
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
        self._info: list[tuple[int, str, int | None, float]] = []
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
                self._info.append((slot, source.key, source.fallback_index, source.default))
        self._copies = _runs(destination, origin)
        self._info_columns = [(column, key) for column, key, *_ in self._info]

    def row(self, obs: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """One environment's flat state vector."""
        row = np.empty(self.size)
        for destination, origin in self._copies:
            row[destination] = obs[origin]
        for column, key, fallback, default in self._info:
            row[column] = info.get(key, default if fallback is None else obs[fallback])
        return row

    def rows(self, obs: np.ndarray, infos: Sequence[dict[str, Any]]) -> np.ndarray:
        """The `[N, D]` state rows of N environments from their stacked observations and infos."""
        rows = np.empty((len(infos), self.size))
        for destination, origin in self._copies:
            rows[:, destination] = obs[:, origin]
        try:  # after a step every info normally has every key
            for column, key in self._info_columns:
                rows[:, column] = [info[key] for info in infos]
        except KeyError:  # after a reset some keys are missing: row by row, with fallbacks
            for i, info in enumerate(infos):
                rows[i] = self.row(obs[i], info)
        return rows


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
