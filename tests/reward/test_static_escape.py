"""Early, clear refusals for the usual ways reward code reaches modules or files it may not use."""

from __future__ import annotations

import pytest

from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.static import check_source

HEADER = "import typing\nimport numpy as np\n\n\ndef compute_reward(state, action, next_state):\n"


@pytest.mark.parametrize(
    "line",
    [
        "    typing.sys.modules['os'].system('true')",
        "    np.save('/tmp/x.npy', action)",
        "    np.load('/etc/passwd')",
        "    action.tofile('/tmp/out')",
    ],
)
def test_module_and_file_escapes_are_forbidden(line: str) -> None:
    with pytest.raises(RewardError) as info:
        check_source(HEADER + line + "\n    return action, {}\n")
    assert info.value.category is ErrorCategory.FORBIDDEN_IMPORT
    assert info.value.line == 6
