"""Any exception a reward raises, however odd, is a `runtime_error` that names its class.

A reward is hostile code: it can raise a BaseException subclass (KeyboardInterrupt, SystemExit
included), or an exception whose `__str__` raises, returns a non-string or a huge string, or whose
class lies about its name. None of these may escape the checked call or crash the formatting of
the error: before, they ended the worker with a traceback, seen as "crashed: status 1".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rewardsmith.reward.call import call_reward, exception_category
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.loader import load_reward, user_traceback

N = 4
MESSAGE_CAP = 4_096  # "a few KB": the longest message the error may carry
CLASSES = """
class Odd(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self):
        raise Odd("str of str")


class NotAString(Exception):
    def __str__(self):
        return 42


class Huge(Exception):
    def __str__(self):
        return "x" * 5_000_000


class Liar(type):
    @property
    def __name__(cls):
        raise Odd("no name")


class Nameless(Exception, metaclass=Liar):
    pass


class Recursive(Exception):
    def __str__(self):
        return str(self)
"""
RAISES = {
    "Odd": "Odd('a BaseException subclass')",
    "KeyboardInterrupt": "KeyboardInterrupt()",
    "SystemExit": "SystemExit(3)",
    "GeneratorExit": "GeneratorExit()",
    "Unprintable": "Unprintable()",
    "NotAString": "NotAString()",
    "Huge": "Huge()",
    "Nameless": "Nameless('hidden')",
    "Recursive": "Recursive()",
}


def _reward(tmp_path: Path, raise_expr: str, at_load: bool = False) -> Path:
    body = f"    raise {raise_expr}\n"
    source = f"import numpy as np\n{CLASSES}\n"
    if at_load:
        source += f"raise {raise_expr}\n"
    source += f"\n\ndef compute_reward(state, action, next_state):\n{body}"
    path = tmp_path / "reward.py"
    path.write_text(source)
    return path


def _call(path: Path) -> RewardError:
    fn = load_reward(path)
    state = {"x": np.zeros(N)}
    with pytest.raises(RewardError) as caught:
        call_reward(fn, state, np.zeros(N, dtype=np.int64), state, 7, str(path))
    return caught.value


@pytest.mark.parametrize("name", list(RAISES))
def test_any_exception_from_a_reward_call_is_a_runtime_error_naming_it(
    name: str, tmp_path: Path
) -> None:
    path = _reward(tmp_path, RAISES[name])
    error = _call(path)
    assert error.category == ErrorCategory.RUNTIME_ERROR
    assert error.message.startswith(f"{name}"), error.message
    assert error.step == 7
    assert isinstance(error.message, str) and len(error.message) <= MESSAGE_CAP + 100
    assert error.traceback is not None and f'File "{path}"' in error.traceback
    assert len(error.traceback) < 20_000
    assert str(error)  # the error itself always formats
    assert RewardError.from_dict(error.to_dict()) == error


@pytest.mark.parametrize("name", list(RAISES))
def test_any_exception_while_loading_is_a_runtime_error_naming_it(
    name: str, tmp_path: Path
) -> None:
    path = _reward(tmp_path, RAISES[name], at_load=True)
    with pytest.raises(RewardError) as caught:
        load_reward(path)
    error = caught.value
    assert error.category == ErrorCategory.RUNTIME_ERROR
    assert f"failed while loading: {name}" in error.message, error.message
    assert len(error.message) <= MESSAGE_CAP + 200
    assert error.traceback is not None and f'File "{path}"' in error.traceback


def test_messages_are_kept_and_capped(tmp_path: Path) -> None:
    path = _reward(tmp_path, "ValueError('bad [bold]value[/]')")
    assert _call(path).message == "ValueError: bad [bold]value[/]"
    huge = _call(_reward(tmp_path, "Huge()")).message
    assert huge.startswith("Huge: xxx") and huge.endswith("characters in all]")
    assert "<unprintable" in _call(_reward(tmp_path, "Unprintable()")).message


def test_user_traceback_never_raises() -> None:
    namespace: dict[str, object] = {}
    exec(CLASSES, namespace)
    for name in ("Unprintable", "NotAString", "Huge", "Recursive"):
        try:
            raise namespace[name]()  # type: ignore[operator]
        except BaseException as exc:
            text = user_traceback(exc, "reward.py")
        assert text.startswith(name) and len(text) < 20_000


def test_exception_category_never_raises_and_is_not_fooled() -> None:
    namespace: dict[str, object] = {}
    exec(
        CLASSES + "\nclass Fake(Exception):\n"
        "    @property\n    def __class__(self):\n        return MemoryError\n",
        namespace,
    )
    assert exception_category(namespace["Fake"]()) == ErrorCategory.RUNTIME_ERROR  # type: ignore[operator]
    unprintable = type("U", (RuntimeError,), {"__str__": lambda self: 1 / 0})()
    assert exception_category(unprintable) == ErrorCategory.RUNTIME_ERROR
    assert exception_category(MemoryError()) == ErrorCategory.MEMORY_LIMIT


def test_a_hostile_result_is_a_runtime_error_too(tmp_path: Path) -> None:
    path = tmp_path / "reward.py"
    path.write_text(
        f"import numpy as np\n{CLASSES}\n\n"
        "class Parts(dict):\n    def items(self):\n        raise Odd('from items')\n\n\n"
        "def compute_reward(state, action, next_state):\n"
        "    return np.zeros(len(action)), Parts()\n"
    )
    error = _call(path)
    assert error.category == ErrorCategory.RUNTIME_ERROR and error.message == "Odd: from items"


def test_a_huge_class_name_is_capped() -> None:
    huge = type("E" * 100_000, (Exception,), {})

    def reward(state: object, action: object, next_state: object) -> None:
        raise huge("boom")

    state = {"x": np.zeros(N)}
    with pytest.raises(RewardError) as caught:
        call_reward(reward, state, np.zeros(N, dtype=np.int64), state, 0, "reward.py")
    message = caught.value.message
    assert message.startswith("EEE") and message.endswith(": boom") and len(message) < 1_000
