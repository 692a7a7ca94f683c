"""An in-process stand-in for an LLM, for the fast test tier: scripted replies, no server, no
litellm. The loop calls it exactly as it calls `LLMClient` (`ChatModel.complete`), so the
designer, the critic's review and the analyzer's summary run their real code around it; the
HTTP path through litellm is covered by tests/eureka_loop/test_llm.py and the slow tier,
against the scripted server (tests/llm_server.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from rewardsmith.eureka_loop.llm import LLMCall, Message, prompt_hash

Reply = str | Callable[[Sequence[Message]], str]


class ScriptedModel:
    """Answers calls in order from `replies`, then with `default`; records every prompt.

    `by_prompt` answers the calls whose prompt starts with one of its keys, without taking a
    reply from the queue: e.g. the critic's review, whichever candidate it is about.
    """

    name = "scripted/in-process"

    def __init__(
        self,
        replies: Sequence[Reply],
        default: Reply = "",
        by_prompt: dict[str, Reply] | None = None,
    ) -> None:
        self._replies = list(replies)
        self._default = default
        self._by_prompt = dict(by_prompt or {})
        self._lock = threading.Lock()
        self.prompts: list[list[Message]] = []

    def complete(self, messages: Sequence[Message], *, check_budget: bool = True) -> LLMCall:
        with self._lock:  # the designer samples concurrently
            self.prompts.append(list(messages))
            text = str(messages[0]["content"]) if messages else ""
            routed = [r for start, r in self._by_prompt.items() if text.startswith(start)]
            if routed:
                reply = routed[0]
            else:
                reply = self._replies.pop(0) if self._replies else self._default
        text = reply(messages) if callable(reply) else reply
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        return LLMCall(
            prompt_hash=prompt_hash(messages),
            model=self.name,
            messages=list(messages),
            reply=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(text.split()),
            attempts=1,
            finish_reason="stop",
        )
