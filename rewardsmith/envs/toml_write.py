"""Write parsed TOML back as text: enough of TOML for task files, checked by parsing it again.

The standard library reads TOML but cannot write it; a run rewrites a task file's reward paths in
its own copy (`task_copy.py`), so it needs the other direction for the values `tomllib` returns.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import tomllib
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def dumps(data: dict[str, Any]) -> str:
    """TOML text that `tomllib.loads` turns back into `data` (raises ValueError if it would not)."""
    lines: list[str] = []
    _table(lines, (), data)
    text = "\n".join(lines).strip("\n") + "\n"
    if tomllib.loads(text) != data:
        raise ValueError("the TOML written does not read back as the same data")
    return text


def _table(lines: list[str], path: tuple[str, ...], table: dict[str, Any]) -> None:
    plain = {k: v for k, v in table.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    if path and (plain or not tables):
        lines += ["", "[" + ".".join(_key(p) for p in path) + "]"]
    lines += [f"{_key(k)} = {_value(v)}" for k, v in plain.items()]
    for key, sub in tables.items():
        _table(lines, (*path, key), sub)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"cannot write {type(value).__name__} {value!r} as TOML")
