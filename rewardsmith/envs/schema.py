"""State schemas: the named, documented fields that reward code reads as `state.<field>`.

Training builds a batch of state fields on every environment step, so the hot path avoids a dict
per environment: either one flat float64 vector per environment (the fields in schema order, see
`StateSchema.layout`) stacked into one `[N, D]` array, or the stacked observations themselves
(`envs/obs_layout.py`); a `StateBatch` makes a field's read-only array only when reward code
reads it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

# Where a field lives in the flat vector: a column index (scalar field) or a slice (vector field).
Slot = int | slice


@dataclass(frozen=True)
class Field:
    """One named state field, per environment: a scalar (`shape=()`) or a vector (`shape=(d,)`)."""

    name: str
    description: str
    units: str = ""
    shape: tuple[int, ...] = ()
    reveals_outcome: bool = False
    """True for fields that give away the episode's success or failure (e.g. a crash flag):
    reward code that reads them is flagged as a reward-hacking suspect."""

    def shape_text(self) -> str:
        """The batched shape as the prompt and the docs show it, e.g. `[N]` or `[N, 6]`."""
        return "[" + ", ".join(["N", *map(str, self.shape)]) + "]"

    def to_dict(self) -> dict[str, object]:
        """The field as `rewardsmith tasks` and the prompts list it (shape as `[N, ...]` text)."""
        return {
            "name": self.name,
            "description": self.description,
            "units": self.units,
            "shape": self.shape_text(),
        }


@dataclass(frozen=True)
class StateSchema:
    """The ordered fields of a task's state."""

    fields: tuple[Field, ...]

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Field names in schema order, which is also the order of the flat state vector."""
        return tuple(f.name for f in self.fields)

    @cached_property
    def layout(self) -> dict[str, Slot]:
        """Each field's place in the flat state vector, in schema order."""
        layout: dict[str, Slot] = {}
        offset = 0
        for field in self.fields:
            if field.shape == ():
                layout[field.name] = offset
                offset += 1
            else:
                size = int(np.prod(field.shape))
                layout[field.name] = slice(offset, offset + size)
                offset += size
        return layout

    @cached_property
    def size(self) -> int:
        """Length of the flat state vector."""
        return sum(int(np.prod(field.shape)) for field in self.fields)

    def flatten(self, values: Mapping[str, Any]) -> np.ndarray:
        """One environment's fields as a flat float64 vector in schema order."""
        return np.concatenate(
            [np.ravel(np.asarray(values[name], dtype=np.float64)) for name in self.names]
        )

    def record(self, vector: np.ndarray) -> FieldRecord:
        """A read-only mapping view of one environment's flat state vector."""
        return FieldRecord(vector, self.layout)

    def __getitem__(self, name: str) -> Field:
        for field in self.fields:
            if field.name == name:
                return field
        raise KeyError(name)

    def validate(self, values: Mapping[str, np.ndarray], batch: int) -> None:
        """Raise ValueError if `values` does not hold exactly the schema's fields and shapes."""
        missing = set(self.names) - set(values)
        extra = set(values) - set(self.names)
        if missing or extra:
            raise ValueError(
                f"state fields differ from the schema: missing {missing}, extra {extra}"
            )
        for field in self.fields:
            expected = (batch, *field.shape)
            got = np.shape(values[field.name])
            if got != expected:
                raise ValueError(f"field {field.name!r} has shape {got}, expected {expected}")


class FieldRecord(Mapping[str, Any]):
    """One environment's state fields, stored as its flat vector: cheap to build every step.

    Behaves as a read-only mapping from field name to value (a float, or a read-only array for a
    vector field). It is immutable, so copying it (SB3 deep-copies every step's infos) returns it.
    """

    __slots__ = ("layout", "vector")

    def __init__(self, vector: np.ndarray, layout: dict[str, Slot]) -> None:
        vector.flags.writeable = False
        self.vector = vector
        self.layout = layout

    def __getitem__(self, name: str) -> Any:
        slot = self.layout[name]
        if isinstance(slot, int):
            return float(self.vector[slot])
        return self.vector[slot]

    def __iter__(self) -> Iterator[str]:
        return iter(self.layout)

    def __len__(self) -> int:
        return len(self.layout)

    def __copy__(self) -> FieldRecord:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FieldRecord:
        return self

    def __repr__(self) -> str:
        return f"FieldRecord({dict(self)!r})"


class FieldSource(Protocol):
    """Where a lazily built `StateBatch` gets a field's `[N]` / `[N, d]` array from."""

    def field(self, name: str) -> np.ndarray:
        """Field `name` for all N environments; nothing else may write to the array handed out."""
        ...


class _Rows:
    """Fields as views into one `[N, D]` array of flat state vectors."""

    __slots__ = ("_layout", "_rows")

    def __init__(self, rows: np.ndarray, layout: Mapping[str, Slot]) -> None:
        self._rows, self._layout = rows, layout

    def field(self, name: str) -> np.ndarray:
        return self._rows[:, self._layout[name]]


class StateBatch:
    """Read-only attribute access to batched state fields, as reward code sees them.

    Arrays are marked read-only so a reward cannot change the state it shares with the next call.
    Training builds one on every environment step, so there a field's array is made only when
    reward code first reads it (rewards read a few of the fields): see `from_source`.
    """

    __slots__ = ("_names", "_source", "_views")
    _names: Collection[str]
    _source: FieldSource | None
    _views: dict[str, np.ndarray]

    def __init__(self, values: Mapping[str, np.ndarray]) -> None:
        frozen = {}
        for name, array in values.items():
            view = np.asarray(array).view()
            view.flags.writeable = False
            frozen[name] = view
        self._set(frozen, None, frozen)

    @classmethod
    def from_source(cls, names: Collection[str], source: FieldSource) -> StateBatch:
        """Fields `names`, each asked of `source` when first read; the source must not hand
        out arrays that anything else writes to (they are only marked read-only)."""
        batch = object.__new__(cls)
        batch._set(names, source, {})
        return batch

    @classmethod
    def from_rows(cls, rows: np.ndarray, layout: Mapping[str, Slot]) -> StateBatch:
        """Fields as views into `rows` (laid out as `layout` says), which is made read-only."""
        rows.flags.writeable = False  # and with it every view of it
        return cls.from_source(layout, _Rows(rows, layout))

    def _set(
        self, names: Collection[str], source: FieldSource | None, views: dict[str, np.ndarray]
    ) -> None:
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_source", source)
        object.__setattr__(self, "_views", views)

    def __getattr__(self, name: str) -> np.ndarray:
        view = self._views.get(name)
        if view is None:
            if self._source is None or name not in self._names:
                known = ", ".join(sorted(self._names))
                raise AttributeError(f"state has no field {name!r}; the fields are: {known}")
            view = self._views[name] = self._source.field(name)
            view.flags.writeable = False
        return view

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("state is read-only")

    def __getitem__(self, name: str) -> np.ndarray:
        return self.__getattr__(name)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __dir__(self) -> list[str]:
        return sorted(self._names)

    def keys(self) -> list[str]:
        """The field names, for reward code that treats the state as a mapping."""
        return list(self._names)

    def as_dict(self) -> dict[str, np.ndarray]:
        """Every field as a plain dict of read-only arrays; lazy fields are all built now."""
        return {name: self.__getattr__(name) for name in self._names}
