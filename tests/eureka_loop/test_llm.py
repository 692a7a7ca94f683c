"""The LLM client against a real OpenAI-compatible server on 127.0.0.1 (``scripted_llm``)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from rewardsmith.eureka_loop.llm import (
    Budget,
    BudgetExceededError,
    LLMCall,
    LLMClient,
    LLMConfig,
    LLMConfigError,
    LLMUnavailableError,
    prompt_hash,
)
from tests.llm_fixtures import ScriptedLLMFactory
from tests.llm_server import ScriptedLLMServer

MESSAGES = [
    {"role": "system", "content": "You write reward functions."},
    {"role": "user", "content": "Make the cheetah run forward."},
]


def client_for(server: ScriptedLLMServer, **overrides: Any) -> LLMClient:
    """A client with fast backoff and a short timeout, so failure paths stay quick."""
    settings: dict[str, Any] = {"backoff_base_s": 0.01, "timeout_s": 5.0, "max_retries": 2}
    settings.update(overrides)
    budget = settings.pop("budget", None)
    return LLMClient(
        LLMConfig(model=server.model, api_base=server.base_url, **settings), budget=budget
    )


def test_good_reply_is_recorded(
    scripted_llm: ScriptedLLMFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = scripted_llm(["def compute_reward(s, a, n):\n    return 1, {}"])
    client = client_for(server, temperature=0.7, max_tokens_reply=256)

    call = client.complete(MESSAGES)

    assert call.ok and call.error is None
    assert call.reply.startswith("def compute_reward")
    assert call.attempts == 1
    assert call.prompt_hash == prompt_hash(MESSAGES) and len(call.prompt_hash) == 64
    assert call.model == "openai/scripted"
    assert call.messages == MESSAGES
    # The server counts whitespace-separated words as tokens.
    assert call.prompt_tokens == 9 and call.completion_tokens == 7
    assert call.total_tokens == 16
    assert call.latency_s > 0
    assert call.finish_reason == "stop"
    assert call.cost_usd == 0.0 and call.cost_known is False  # litellm has no price for it
    sent = server.requests[0]
    assert sent["messages"] == MESSAGES
    assert sent["temperature"] == 0.7
    assert sent["max_tokens"] == 256
    assert server.headers[0]["authorization"] == "Bearer sk-local"


def test_cost_is_known_for_a_priced_model(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm([{"text": "ok", "prompt_tokens": 1000, "completion_tokens": 1000}])
    client = LLMClient(LLMConfig(model="openai/gpt-4o-mini", api_base=server.base_url))

    call = client.complete(MESSAGES)

    assert call.cost_known is True
    assert 0 < call.cost_usd < 0.01


@pytest.mark.parametrize("failure", [{"status": 429}, {"status": 500}, {"status": 503}])
def test_transient_error_then_success_is_retried(
    scripted_llm: ScriptedLLMFactory, failure: dict[str, Any]
) -> None:
    server = scripted_llm([failure, "second time lucky"])

    call = client_for(server).complete(MESSAGES)

    assert call.reply == "second time lucky"
    assert call.attempts == 2
    assert server.request_count == 2


def test_dropped_connection_is_retried(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm([{"hang_up": True}, "back again"])

    call = client_for(server).complete(MESSAGES)

    assert call.reply == "back again" and call.attempts == 2


def test_retry_after_header_is_honoured(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm([{"status": 429, "retry_after": 0.3}, "ok"])

    call = client_for(server, backoff_base_s=0.001).complete(MESSAGES)

    assert call.reply == "ok" and call.latency_s >= 0.3


def test_slow_reply_beyond_timeout_is_retried(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm([{"delay_s": 3.0, "text": "too late"}, "in time"])

    call = client_for(server, timeout_s=0.5).complete(MESSAGES)

    assert call.reply == "in time" and call.attempts == 2
    assert call.latency_s < 2.5


def test_always_slow_fails_clearly(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm([{"delay_s": 3.0, "text": "late"}] * 2)

    with pytest.raises(LLMUnavailableError, match=r"failed 2 times.*Timeout") as info:
        client_for(server, timeout_s=0.4, max_retries=1).complete(MESSAGES)

    assert info.value.call is not None and info.value.call.attempts == 2


def test_all_500_raises_unavailable_after_retries(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm()  # an exhausted script answers 500

    with pytest.raises(LLMUnavailableError) as info:
        client_for(server, max_retries=3).complete(MESSAGES)

    assert server.request_count == 4
    call = info.value.call
    assert call is not None
    assert call.attempts == 4 and call.error is not None and "InternalServerError" in call.error
    assert call.prompt_hash == prompt_hash(MESSAGES)


QUOTA = {
    "status": 429,
    "body": {"error": {"message": "You exceeded your quota.", "code": "insufficient_quota"}},
}


@pytest.mark.parametrize(
    ("step", "advice"),
    [
        ({"status": 401}, "OPENAI_API_KEY"),
        ({"status": 404}, "not found"),
        ({"status": 400}, "refused the request"),
        (QUOTA, "no quota left"),
    ],
)
def test_fatal_errors_are_not_retried(
    scripted_llm: ScriptedLLMFactory,
    monkeypatch: pytest.MonkeyPatch,
    step: dict[str, Any],
    advice: str,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = scripted_llm([step], default_reply="should not be reached")

    with pytest.raises(LLMConfigError, match=advice):
        client_for(server).complete(MESSAGES)

    assert server.request_count == 1


def test_missing_key_for_hosted_model_fails_before_any_call(
    monkeypatch: pytest.MonkeyPatch, no_remote_network: None
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    with pytest.raises(LLMConfigError, match=r"OPENAI_API_KEY.*--api-base"):
        LLMClient(LLMConfig(model="gpt-4o"))


def test_key_in_environment_is_used_for_hosted_model(
    monkeypatch: pytest.MonkeyPatch, no_remote_network: None
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    LLMClient(LLMConfig(model="gpt-4o"))  # no error, and no call is made


def test_budget_stops_further_calls(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm(default_reply="six words in this reply ok")
    budget = Budget(max_tokens=20)
    client = client_for(server, budget=budget)

    client.complete(MESSAGES)
    assert budget.exceeded() is None
    client.complete(MESSAGES)  # 2 x 15 tokens: now over the limit
    with pytest.raises(BudgetExceededError, match="token budget spent"):
        client.complete(MESSAGES)

    assert server.request_count == 2
    assert budget.tokens == 30


def _call(tokens: int, usd: float, *, known: bool = True) -> LLMCall:
    return LLMCall(
        prompt_hash="h",
        model="m",
        messages=[],
        prompt_tokens=tokens,
        cost_usd=usd,
        cost_known=known,
    )


def test_budget_reasons() -> None:
    assert Budget().exceeded() is None

    tokens = Budget(max_tokens=100)
    tokens.record(_call(60, 0.0))
    assert tokens.exceeded() is None
    tokens.record(_call(60, 0.0))
    reason = tokens.exceeded()
    assert reason is not None and "120 of 100 tokens" in reason

    dollars = Budget(max_usd=0.05)
    dollars.record(_call(10, 0.02))
    assert dollars.exceeded() is None
    dollars.record(_call(10, 0.04))
    reason = dollars.exceeded()
    assert reason is not None and "$0.0600 of $0.0500" in reason

    uncosted = Budget(max_usd=0.01)
    uncosted.record(_call(10, 0.0, known=False))
    assert uncosted.exceeded() is None  # a dollar limit cannot see a call without a price


def test_budget_is_thread_safe() -> None:
    budget = Budget()

    def record() -> None:
        for _ in range(1000):
            budget.record(_call(1, 0.001))

    threads = [threading.Thread(target=record) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert budget.tokens == 8000
    assert budget.usd == pytest.approx(8.0)


def test_call_round_trips_through_json() -> None:
    call = LLMCall(
        prompt_hash=prompt_hash(MESSAGES),
        model="openai/scripted",
        messages=MESSAGES,
        reply="x",
        prompt_tokens=3,
        completion_tokens=4,
        latency_s=0.5,
        attempts=2,
    )
    data = json.loads(json.dumps(call.to_dict()))
    data["added_in_a_later_version"] = True

    assert LLMCall.from_dict(data) == call


def test_prompt_hash_is_canonical() -> None:
    reordered = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    changed = [*MESSAGES[:1], {"role": "user", "content": "Make it run backward."}]

    assert prompt_hash(reordered) == prompt_hash(MESSAGES)
    assert prompt_hash(changed) != prompt_hash(MESSAGES)


def test_malformed_messages_are_rejected_before_sending(scripted_llm: ScriptedLLMFactory) -> None:
    server = scripted_llm()

    with pytest.raises(ValueError, match="role"):
        client_for(server).complete([{"text": "hi"}])

    assert server.request_count == 0
