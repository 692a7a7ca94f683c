"""Static checks and the loader: BAD_REWARDS.md cases 2-5 (and 9 at load time), at the unit level.

Static checks never execute the code; the loader (sandbox side only) executes the module and
returns `compute_reward`, with errors naming their category and, where it helps, the line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.loader import load_reward
from rewardsmith.reward.static import check_source

E = ErrorCategory
GOOD = """import numpy as np


def compute_reward(state, action, next_state):
    upright = np.cos(next_state.pole_angle)
    return upright, {"upright": upright}
"""


def static_error(source: str) -> RewardError:
    with pytest.raises(RewardError) as caught:
        check_source(source, "reward.py")
    return caught.value


def test_good_reward_passes_and_loads(tmp_path: Path) -> None:
    check_source(GOOD)
    path = tmp_path / "reward.py"
    path.write_text(GOOD)
    fn = load_reward(path)
    total, components = fn(None, None, type("S", (), {"pole_angle": np.zeros(2)})())
    assert total.tolist() == [1.0, 1.0] and list(components) == ["upright"]


def test_syntax_error_has_line_and_column() -> None:
    error = static_error(
        "import numpy as np\n\ndef compute_reward(state, action, next_state)\n    return 1\n"
    )
    assert error.category == E.SYNTAX_ERROR
    assert error.line == 3 and error.column is not None and error.column > 1
    assert "line 3" in str(error) and "syntax_error" in str(error)


def test_indentation_error_is_a_syntax_error() -> None:
    error = static_error("def compute_reward(state, action, next_state):\nreturn 1\n")
    assert error.category == E.SYNTAX_ERROR and error.line == 2


@pytest.mark.parametrize(
    ("source", "phrase"),
    [
        (
            "import numpy as np\n\ndef reward(state, action, next_state):\n    return 1\n",
            "no top-level function",
        ),
        (GOOD + "\n\n" + GOOD.split("\n\n\n")[1], "defined 2 times"),
        (
            "def compute_reward(state, next_state):\n    pass\n",
            "compute_reward(state, action, next_state)",
        ),
        (
            "def compute_reward(state, action, next_state, extra):\n    pass\n",
            "compute_reward(state, action, next_state)",
        ),
        (
            "def compute_reward(state, action, next):\n    pass\n",
            "compute_reward(state, action, next_state)",
        ),
        ("def compute_reward(*args):\n    pass\n", "the contract is"),
        ("def compute_reward(state, action, next_state, **kw):\n    pass\n", "the contract is"),
        ("async def compute_reward(state, action, next_state):\n    pass\n", "async"),
        (
            "class R:\n    def compute_reward(self, state, action, next_state):\n        pass\n",
            "no top-level",
        ),
    ],
    ids=[
        "missing",
        "duplicate",
        "missing-param",
        "extra-param",
        "renamed-param",
        "varargs",
        "kwargs",
        "async",
        "method",
    ],
)
def test_signature_errors(source: str, phrase: str) -> None:
    error = static_error(source)
    assert error.category == E.SIGNATURE_ERROR
    assert phrase in error.message


@pytest.mark.parametrize(
    "line",
    [
        "import os",
        "import subprocess",
        "import socket",
        "from os import path",
        "import os.path",
        "from subprocess import run",
    ],
)
def test_forbidden_imports(line: str) -> None:
    error = static_error(f"import numpy as np\n{line}\n\n" + GOOD.split("\n", 1)[1])
    assert error.category == E.FORBIDDEN_IMPORT
    assert error.line == 2
    assert "numpy" in error.message  # says what is allowed


def test_forbidden_import_inside_the_function() -> None:
    source = GOOD.replace("    upright =", "    import socket\n    upright =")
    assert static_error(source).category == E.FORBIDDEN_IMPORT


@pytest.mark.parametrize(
    "line",
    ["import math", "from typing import Any", "import numpy", "from __future__ import annotations"],
)
def test_allowed_imports(line: str) -> None:
    check_source(f"{line}\n" + GOOD)


@pytest.mark.parametrize(
    "call", ["open('/etc/passwd')", "eval('1')", "exec('x = 1')", "__import__('os')"]
)
def test_io_and_dynamic_code_are_refused(call: str) -> None:
    source = GOOD.replace("    upright =", f"    {call}\n    upright =")
    assert static_error(source).category == E.FORBIDDEN_IMPORT


def test_dunder_escape_is_refused() -> None:
    source = GOOD.replace("    upright =", "    x = ().__class__.__bases__\n    upright =")
    assert static_error(source).category == E.FORBIDDEN_IMPORT


def test_static_checks_do_not_execute_code() -> None:
    check_source(f"x = [1][5]\n{GOOD}")  # executing it would raise IndexError


def test_module_level_error_is_a_runtime_error_with_user_frames(tmp_path: Path) -> None:
    path = tmp_path / "reward.py"
    path.write_text("import numpy as np\nSCALE = undefined_name * 2\n" + GOOD.split("\n", 1)[1])
    with pytest.raises(RewardError) as caught:
        load_reward(path)
    error = caught.value
    assert error.category == E.RUNTIME_ERROR
    assert "NameError" in error.message and "undefined_name" in error.message
    assert error.traceback is not None
    assert f'File "{path}", line 2' in error.traceback
    assert "rewardsmith" not in error.traceback.replace(str(path), "")


def test_loader_runs_the_static_checks(tmp_path: Path) -> None:
    path = tmp_path / "reward.py"
    path.write_text("import subprocess\n" + GOOD)
    with pytest.raises(RewardError) as caught:
        load_reward(path)
    assert caught.value.category == E.FORBIDDEN_IMPORT


def test_error_round_trips_through_json_dict() -> None:
    error = RewardError(E.NONFINITE_REWARD, "component 'x' is not finite", step=40, component="x")
    assert RewardError.from_dict(error.to_dict()) == error
    assert str(error) == "nonfinite_reward: component 'x' is not finite (at step 40; component 'x')"
