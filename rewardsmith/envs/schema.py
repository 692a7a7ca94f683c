"""State schemas: the named, documented fields that reward code reads as `state.<field>`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Field:
    """One named state field, per environment: a scalar (`shape=()`) or a vector (`shape=(d,)`)."""

    name: str
    description: str
    units: str = ""
    shape: tuple[int, ...] = ()

    def shape_text(self) -> str:
        """The batched shape as the prompt and the docs show it, e.g. `[N]` or `[N, 6]`."""
        return "[" + ", ".join(["N", *map(str, self.shape)]) + "]"

    def to_dict(self) -> dict[str, object]:
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

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

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
            raise ValueError(f"state fields differ from the schema: missing {missing}, extra {extra}")
        for field in self.fields:
            expected = (batch, *field.shape)
            got = np.shape(values[field.name])
            if got != expected:
                raise ValueError(f"field {field.name!r} has shape {got}, expected {expected}")


class StateBatch:
    """Read-only attribute access to batched state fields, as reward code sees them.

    Arrays are marked read-only so a reward cannot change the state it shares with the next call.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, np.ndarray]) -> None:
        frozen = {}
        for name, array in values.items():
            view = np.asarray(array).view()
            view.flags.writeable = False
            frozen[name] = view
        object.__setattr__(self, "_values", frozen)

    def __getattr__(self, name: str) -> np.ndarray:
        values = object.__getattribute__(self, "_values")
        try:
            return values[name]  # type: ignore[no-any-return]
        except KeyError:
            known = ", ".join(sorted(values))
            raise AttributeError(f"state has no field {name!r}; the fields are: {known}") from None

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("state is read-only")

    def __getitem__(self, name: str) -> np.ndarray:
        return self.__getattr__(name)

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __dir__(self) -> list[str]:
        return sorted(self._values)

    def keys(self) -> list[str]:
        return list(self._values)

    def as_dict(self) -> dict[str, np.ndarray]:
        return dict(self._values)
