"""The messages between the learner and the reward process, and their checks.

Each message is one frame on a pipe: a 4-byte length, then the bytes (one `write` per frame, and
reads buffered, so an exchange costs one system call each way on each side). Control messages
are JSON (`J` + the object). The call and result messages are binary, because they carry arrays:
a call is `C`, the step and a layout id, then the raw arrays; a result is `R`, a names id, then
float64 `[N]` total and components. A batch `B` carries T consecutive steps at once (the step
numbers, then `[T, N, ...]` arrays; see `Calls`) and is answered by `T`, the float64 `[T, N]`
totals only: training needs nothing else from it. Layouts and component names are declared once
in JSON (`layout`, `names`) and referred to by id until they change. No message is ever unpickled, and the learner
reads the reward process's replies as hostile input: a capped length, a known kind, names and
error fields checked, the payload exactly as long as the declared names say.

learner -> reward process: `init` (source, file name, field names), then `C` calls (the action,
and for each field the reward reads: state then next_state) or `B` batches of them, preceded by
a `layout` whenever the batch size, the action's shape or the fields sent change.
reward process -> learner: first `confined` (the confinement in force, sent before the reward's
source is read: the only claim of it the learner keeps, since the reward controls the process
once its module has run); then `ready` or `error` after init; then per call an `R` result
(preceded by `names` when its component names change) or per batch a `T` of totals, an `error`
(a RewardError; for a batch, the one call's, naming its steps), or `need` (fields the reward
read that were not sent: the learner adds them to what it sends and calls again).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from rewardsmith.reward.check import MAX_COMPONENT_NAME, MAX_COMPONENTS
from rewardsmith.reward.errors import ErrorCategory, RewardError

HEADER_CAP = 64 * 1024
# What the wire carries: the contract's own limits on component names (`reward/check.py`).
NAME_CAP = MAX_COMPONENT_NAME
MESSAGE_CAP = 4_000
TRACEBACK_CAP = 20_000
INIT_CAP = 16 * 1024 * 1024  # the reward's source rides in the init message
_LENGTH = struct.Struct("=I")
_CALL = struct.Struct("=cqi")  # kind, step (-1: none), layout id
_CALLS = struct.Struct("=cii")  # kind, number of steps, layout id
_RESULT = struct.Struct("=ci")  # kind, names id


class WireError(Exception):
    """A message that breaks the protocol, or the other side hung up."""


@dataclass
class Init:
    """The first message: the reward's source, to be checked and loaded there, and the fields."""

    source: str
    filename: str
    field_names: list[str]


@dataclass
class Call:
    """One step's call: `state` and `next_state` hold only the fields sent (`[N, ...]` each)."""

    step: int | None
    action: np.ndarray
    state: dict[str, np.ndarray]
    next_state: dict[str, np.ndarray]


@dataclass
class Calls:
    """T consecutive steps in one message: `steps` is int64 `[T]`, every array `[T, N, ...]`."""

    steps: np.ndarray
    action: np.ndarray
    state: dict[str, np.ndarray]
    next_state: dict[str, np.ndarray]


@dataclass
class Reply:
    """The reward process's answer: one of confined / ready / result / totals / need / error."""

    op: str
    mechanisms: list[str] | None = None
    total: np.ndarray | None = None
    components: dict[str, np.ndarray] | None = None
    need: list[str] | None = None
    error: RewardError | None = None


def _json(message: dict[str, Any]) -> bytes:
    return b"J" + json.dumps(message, separators=(",", ":")).encode()


def _control(frame: bytes) -> dict[str, Any]:
    """A JSON control message. Parsing hostile bytes can fail in more ways than bad syntax: deep
    nesting (RecursionError) and huge integers (ValueError) are protocol breaks too."""
    if len(frame) > HEADER_CAP and not frame.startswith(b"J"):
        raise WireError(f"a message of {len(frame)} bytes")
    try:
        message = json.loads(frame[1:])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"a message that is not JSON ({exc})") from None
    except (RecursionError, ValueError) as exc:
        raise WireError(f"a JSON message past the parser's limits ({str(exc)[:200]})") from None
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise WireError("a message without an op")
    return message


def _text(value: Any, cap: int, what: str, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise WireError(f"{what} is not text")
    return value if len(value) <= cap else value[:cap] + f"... [{len(value) - cap} more chars]"


def _integer(value: Any, what: str) -> int | None:
    if value is None:
        return None
    if type(value) is not int:
        raise WireError(f"{what} is not an integer")
    return value


def error_from_wire(data: Any) -> RewardError:
    """A RewardError from the reward process's record, every field checked (it is untrusted)."""
    if not isinstance(data, dict):
        raise WireError("an error record that is not an object")
    try:
        category = ErrorCategory(str(data.get("category")))
    except ValueError:
        raise WireError(f"an unknown error category {str(data.get('category'))[:40]!r}") from None
    message = _text(data.get("message"), MESSAGE_CAP, "the error message", optional=False)
    assert message is not None
    return RewardError(
        category,
        message,
        step=_integer(data.get("step"), "the error step"),
        component=_text(data.get("component"), NAME_CAP, "the error component"),
        traceback=_text(data.get("traceback"), TRACEBACK_CAP, "the traceback"),
        line=_integer(data.get("line"), "the error line"),
        column=_integer(data.get("column"), "the error column"),
    )


def _names(value: Any, allowed: list[str] | None, what: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_COMPONENTS:
        raise WireError(f"{what} is not a list of at most {MAX_COMPONENTS} names")
    for name in value:
        if not isinstance(name, str) or not name or len(name) > NAME_CAP:
            raise WireError(f"{what} holds a name that is not text of 1-{NAME_CAP} chars")
        if allowed is not None and name not in allowed:
            raise WireError(f"{what} names an unknown field {name[:40]!r}")
    if len(set(value)) != len(value):
        raise WireError(f"{what} repeats a name")
    return value


class Channel:
    """One end of the pipe pair; the learner and the reward process each hold one."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self._fd_in, self._fd_out = fd_in, fd_out
        self._buffer = bytearray()
        # Learner side: the layouts declared so far, and the component names the reward declared.
        self._layouts: dict[tuple[Any, ...], int] = {}
        self._names: dict[int, list[str]] = {}
        # Reward process side: the declared layouts, and the names last declared.
        self._declared: dict[
            int, tuple[list[tuple[np.dtype[Any], tuple[int, ...], int]], list[str]]
        ] = {}
        self._last_names: list[str] | None = None
        self._names_id = -1

    def close(self) -> None:
        """Close both ends; safe to call twice or after the other side hung up."""
        for fd in (self._fd_in, self._fd_out):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _send(self, *parts: bytes) -> None:
        """One frame, the parts joined after its length, in one `write` where the pipe takes it."""
        frame = b"".join([_LENGTH.pack(sum(map(len, parts))), *parts])
        try:
            written = os.write(self._fd_out, frame)
            if written < len(frame):
                data = memoryview(frame)[written:]
                while data:
                    data = data[os.write(self._fd_out, data) :]
        except OSError as exc:
            raise WireError(f"the other side hung up ({exc})") from None

    def _receive(self, cap: int) -> bytes | None:
        """The next frame, at most `cap` bytes (checked before reading it); None at end of file."""
        buffer = self._buffer
        while True:
            if len(buffer) >= _LENGTH.size:
                (size,) = _LENGTH.unpack_from(buffer)
                if size > cap:
                    raise WireError(f"a message of {size} bytes (at most {cap} expected)")
                end = _LENGTH.size + size
                if len(buffer) >= end:
                    frame = bytes(buffer[_LENGTH.size : end])
                    del buffer[:end]
                    return frame
            try:
                chunk = os.read(self._fd_in, 65536)
            except OSError as exc:
                raise WireError(f"an unreadable message ({exc})") from None
            if not chunk:
                return None
            buffer += chunk

    # --- learner side ----------------------------------------------------------------------

    def send_init(self, source: str, filename: str, field_names: list[str]) -> None:
        """The first message; answered `ready` once the reward is loaded there, else `error`."""
        self._send(
            _json({"op": "init", "source": source, "filename": filename, "fields": field_names})
        )

    def send_call(
        self, step: int | None, action: np.ndarray, names: tuple[str, ...], arrays: list[np.ndarray]
    ) -> None:
        """A call: `arrays` holds, for each of `names`, its state then its next_state values.

        A field's shape follows from the batch size (the schema fixes the rest), so the layout is
        known by the action's dtype and shape and the names sent.
        """
        key = (action.dtype.char, action.shape, names)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = len(self._layouts)
            declared = [[a.dtype.str, list(a.shape)] for a in [action, *arrays]]
            self._send(
                _json({"op": "layout", "id": layout, "arrays": declared, "fields": list(names)})
            )
        head = _CALL.pack(b"C", -1 if step is None else step, layout)
        self._send(head, action.tobytes(), *(a.tobytes() for a in arrays))

    def send_calls(
        self,
        steps: np.ndarray,
        action: np.ndarray,
        names: tuple[str, ...],
        arrays: list[np.ndarray],
    ) -> None:
        """A batch of `len(steps)` calls: `action` and `arrays` are `[T, N, ...]`, laid out as
        in `send_call`."""
        steps = np.ascontiguousarray(steps, dtype=np.int64)
        key = ("batch", action.dtype.char, action.shape, names)
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = len(self._layouts)
            declared = [[a.dtype.str, list(a.shape)] for a in [steps, action, *arrays]]
            self._send(
                _json({"op": "layout", "id": layout, "arrays": declared, "fields": list(names)})
            )
        head = _CALLS.pack(b"B", len(steps), layout)
        self._send(head, steps.tobytes(), action.tobytes(), *(a.tobytes() for a in arrays))

    def receive_reply(self, n: int | None, field_names: list[str]) -> Reply | None:
        """The next reply, checked; None when the reward process hung up (it died)."""
        while True:
            cap = HEADER_CAP + (8 * n * (MAX_COMPONENTS + 1) if n else 0)
            frame = self._receive(cap)
            if frame is None:
                return None
            if frame[:1] == b"R" and n is not None:
                return self._result(frame, n)
            if frame[:1] == b"T" and n is not None:
                return self._totals(frame, n)
            if frame[:1] != b"J":
                raise WireError(f"a message of unknown kind {frame[:1]!r}")
            message = _control(frame)
            op = message["op"]
            if op == "names":
                names_id = _integer(message.get("id"), "the names id")
                names = _names(message.get("names"), None, "the component names")
                if names_id is None or names_id in self._names or len(self._names) > 1000:
                    raise WireError("component names declared under a used or missing id")
                self._names[names_id] = names
                continue
            if op == "confined":
                mechanisms = _names(message.get("mechanisms"), None, "the mechanisms")
                return Reply(op, mechanisms=mechanisms)
            if op == "ready":
                return Reply(op)  # any confinement it claims now is the reward's word: ignored
            if op == "error":
                return Reply(op, error=error_from_wire(message.get("error")))
            if op == "need":
                return Reply(op, need=_names(message.get("fields"), field_names, "the fields"))
            raise WireError(f"an unexpected reply {op[:40]!r}")

    def _result(self, frame: bytes, n: int) -> Reply:
        if len(frame) < _RESULT.size:
            raise WireError("a result shorter than its header")
        _, names_id = _RESULT.unpack_from(frame)
        names = self._names.get(names_id)
        if names is None:
            raise WireError(f"a result with undeclared component names {names_id}")
        payload = memoryview(frame)[_RESULT.size :]
        if len(payload) != 8 * n * (len(names) + 1):
            raise WireError(f"a result of {len(payload)} bytes for {len(names)} components")
        values = np.frombuffer(payload, dtype=np.float64).reshape(len(names) + 1, n).copy()
        values.flags.writeable = True
        return Reply(
            "result", total=values[0], components=dict(zip(names, values[1:], strict=True))
        )

    def _totals(self, frame: bytes, n: int) -> Reply:
        if len(frame) != 1 + 8 * n:
            raise WireError(f"totals of {len(frame) - 1} bytes for {n} transitions")
        total = np.frombuffer(frame, dtype=np.float64, count=n, offset=1).copy()
        return Reply("totals", total=total)

    # --- reward process side ---------------------------------------------------------------

    def receive_init(self) -> Init:
        """The first message; a hang-up before it is a `WireError`. Parsed, not checked: trusted."""
        frame = self._receive(INIT_CAP)
        if frame is None:
            raise WireError("the learner hung up before sending the reward")
        message = _control(frame)
        return Init(str(message["source"]), str(message["filename"]), list(message["fields"]))

    def receive_call(self) -> Call | Calls | None:
        """The next call or batch (layouts declared on the way are remembered); None when hung
        up. The learner is trusted: its messages are parsed, not checked."""
        while True:
            frame = self._receive(1 << 30)
            if frame is None:
                return None
            if frame[:1] == b"J":
                message = _control(frame)
                layout = [
                    (np.dtype(d), tuple(shape), math.prod(shape)) for d, shape in message["arrays"]
                ]
                self._declared[int(message["id"])] = (layout, list(message["fields"]))
                continue
            if frame[:1] == b"B":
                _, _, layout = _CALLS.unpack_from(frame)
                steps, *arrays = self._arrays(frame, _CALLS.size, layout)
                state, next_state = self._fields(layout, arrays)
                return Calls(steps, arrays[0], state, next_state)
            _, step, layout = _CALL.unpack_from(frame)
            arrays = self._arrays(frame, _CALL.size, layout)
            state, next_state = self._fields(layout, arrays)
            return Call(None if step < 0 else step, arrays[0], state, next_state)

    def _arrays(self, frame: bytes, offset: int, layout: int) -> list[np.ndarray]:
        arrays = []
        for dtype, shape, count in self._declared[layout][0]:
            arrays.append(np.frombuffer(frame, dtype, count, offset).reshape(shape))
            offset += count * dtype.itemsize
        return arrays

    def _fields(
        self, layout: int, arrays: list[np.ndarray]
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The state and next_state arrays after the action, by field name."""
        names = self._declared[layout][1]
        state = {name: arrays[1 + 2 * i] for i, name in enumerate(names)}
        next_state = {name: arrays[2 + 2 * i] for i, name in enumerate(names)}
        return state, next_state

    def send_confined(self, mechanisms: list[str]) -> None:
        """What confines this process, for the record: the first message, before the reward's
        source is read (after that the reward could say anything). Each clipped to what the
        learner accepts, so a long reason never turns into a protocol break."""
        clipped = [m[:NAME_CAP] for m in mechanisms[:MAX_COMPONENTS]]
        self._send(_json({"op": "confined", "mechanisms": clipped}))

    def send_ready(self) -> None:
        """The reward loaded."""
        self._send(_json({"op": "ready"}))

    def send_error(self, error: RewardError) -> None:
        """The reward's error, as a record the learner checks field by field (`error_from_wire`)."""
        self._send(_json({"op": "error", "error": error.to_dict()}))

    def send_need(self, names: list[str]) -> None:
        """The fields the reward read that the call did not carry; the learner sends it again."""
        self._send(_json({"op": "need", "fields": names}))

    def send_result(self, total: np.ndarray, components: dict[str, np.ndarray]) -> None:
        """A call's total and components `[N]`; their names go ahead once, whenever they change."""
        names = list(components)
        if names != self._last_names:
            self._last_names = names
            self._names_id = len(self._names)
            self._names[self._names_id] = names
            self._send(_json({"op": "names", "id": self._names_id, "names": names}))
        payload = [np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in components.values()]
        self._send(_RESULT.pack(b"R", self._names_id), total.tobytes(), *payload)

    def send_totals(self, totals: np.ndarray) -> None:
        """A batch's totals `[T, N]`, as float64."""
        self._send(b"T", np.ascontiguousarray(totals, dtype=np.float64).tobytes())
