"""The trajectory-preference check slot: passes every candidate until that check is built."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from rewardsmith.eureka_loop.state import Context, LoopState


def preference_check(state: LoopState, runtime: Runtime[Context]) -> dict[str, Any]:
    return {}
