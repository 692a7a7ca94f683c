"""LLM access through litellm: one place for retries, token/cost accounting and the budget.

Every node that talks to a model (designer, critic review, analyzer summary) goes through
:class:`LLMClient`, so provider quirks, backoff and accounting are handled once. Each call yields
an :class:`LLMCall` record that the run store keeps, so a resumed run can reuse it instead of
paying again.

``import litellm`` takes seconds, so it happens lazily on first use, and always with the local
model cost map (litellm otherwise fetches the map over the network on import).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from types import ModuleType
from typing import Any, Protocol

Message = dict[str, Any]

LOCAL_API_KEY = "sk-local"
"""Placeholder key sent to a local OpenAI-compatible server (vLLM, Ollama...) that needs none."""


class LLMError(RuntimeError):
    """Base class of the errors this module raises."""


class LLMConfigError(LLMError):
    """The model cannot be used as configured (no key, bad key, unknown model, bad request).

    Retrying cannot help; the message says what the user should change.
    """


class LLMUnavailableError(LLMError):
    """The provider kept failing (rate limits, 5xx, timeouts, connection errors) past the retries.

    ``call`` is the record of the failed call (attempts, latency, last error) for the run store.
    """

    def __init__(self, message: str, call: LLMCall | None = None) -> None:
        super().__init__(message)
        self.call = call


class BudgetExceededError(LLMError):
    """A call was refused because the run's token or dollar budget is spent."""


def _litellm() -> ModuleType:
    """Import litellm on first use, offline-safe and quiet."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def prompt_hash(messages: Sequence[Message]) -> str:
    """SHA-256 of the canonical JSON of the messages: the key under which a reply is cached."""
    canonical = json.dumps(
        list(messages), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class LLMConfig:
    """Which model to call and how patiently; built from CLI flags or the environment."""

    model: str
    api_base: str | None = None
    temperature: float = 1.0
    timeout_s: float = 120
    max_retries: int = 4
    """Retries after the first attempt, for transient failures only."""
    max_tokens_reply: int | None = None
    backoff_base_s: float = 1.0
    """First retry delay; doubles each retry (with jitter), capped at ``backoff_max_s``."""
    backoff_max_s: float = 30.0

    def to_dict(self) -> dict[str, Any]:
        """The settings as a plain record; safe to store, as no API key is ever one of them."""
        return asdict(self)


@dataclass
class LLMCall:
    """One completed (or finally failed) model call, as stored in the run."""

    prompt_hash: str
    model: str
    messages: list[Message]
    reply: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = False
    """False when litellm has no price for the model (local servers): ``cost_usd`` is then 0."""
    latency_s: float = 0.0
    """Wall time of the whole call, retries and backoff included."""
    attempts: int = 0
    error: str | None = None
    finish_reason: str | None = None
    response_id: str | None = None
    created_at: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        """False for a call that finally failed: `error` says why and `reply` is empty."""
        return self.error is None

    @property
    def total_tokens(self) -> int:
        """What the token budget counts: prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        """The record a run keeps of the call (`llm/<key>.json`); `from_dict` reads it back."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMCall:
        """Rebuild a stored call; unknown keys (from a newer version) are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class Budget:
    """Token and dollar limits for a run, shared by concurrent calls (thread-safe)."""

    def __init__(self, max_usd: float | None = None, max_tokens: int | None = None) -> None:
        self.max_usd = max_usd
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._tokens = 0
        self._usd = 0.0
        self._calls = 0

    def record(self, call: LLMCall) -> None:
        """Add a call's usage (also used on resume, replaying the stored calls)."""
        with self._lock:
            self._tokens += call.total_tokens
            self._usd += call.cost_usd
            self._calls += 1

    def exceeded(self) -> str | None:
        """Why no further call should be made, or None while there is budget left."""
        with self._lock:
            if self.max_tokens is not None and self._tokens >= self.max_tokens:
                return (
                    f"token budget spent: {self._tokens:,} of {self.max_tokens:,} tokens used "
                    f"in {self._calls} LLM calls"
                )
            if self.max_usd is not None and self._usd >= self.max_usd:
                return (
                    f"dollar budget spent: ${self._usd:.4f} of ${self.max_usd:.4f} "
                    f"in {self._calls} LLM calls"
                )
            return None

    @property
    def tokens(self) -> int:
        """Tokens used so far by every recorded call, replayed ones of a resumed run included."""
        with self._lock:
            return self._tokens

    @property
    def usd(self) -> float:
        """Dollars spent so far; calls to a model litellm has no price for count as 0."""
        with self._lock:
            return self._usd


def _is_secret(name: str) -> bool:
    return any(part in name.upper() for part in ("KEY", "TOKEN", "SECRET"))


def _missing_credentials(model: str) -> list[str]:
    """Credential variables the provider of ``model`` needs and the environment lacks."""
    try:
        info = _litellm().validate_environment(model=model)
    except Exception:  # an unknown provider: let the first call report it
        return []
    if info.get("keys_in_environment", True):
        return []
    return [k for k in info.get("missing_keys", []) if _is_secret(k)]


def _retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After header in seconds, when it sent one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class ChatModel(Protocol):
    """What the loop's nodes call for a completion: `LLMClient` for a real model, or an
    in-process stand-in (a rerun's recorded replies, the test tier's scripted model)."""

    def complete(self, messages: Sequence[Message], *, check_budget: bool = True) -> LLMCall:
        """A completed call; fails as `LLMClient.complete` does (`LLMUnavailableError` is what
        advisory callers skip). `check_budget=False` calls even when the budget is spent."""
        ...


class LLMClient:
    """Calls one configured model with retries, accounting and an optional shared budget."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        budget: Budget | None = None,
    ) -> None:
        self.config = config
        self.budget = budget
        self._api_key: str | None = None
        if config.api_base and _missing_credentials(config.model):
            # OpenAI-compatible clients insist on a key even when the local server needs none.
            self._api_key = LOCAL_API_KEY
        self.check_credentials()

    def check_credentials(self) -> None:
        """Fail before any call when a hosted provider's key is missing.

        With ``api_base`` (a local or self-hosted server) no key is required.
        """
        if self.config.api_base:
            return
        missing = _missing_credentials(self.config.model)
        if missing:
            raise LLMConfigError(
                f"no API key for model {self.config.model!r}: set {' or '.join(missing)} "
                "in the environment, or pass --api-base URL for an OpenAI-compatible server "
                "(vLLM, Ollama, LM Studio)"
            )

    # -- single call ---------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], *, check_budget: bool = True) -> LLMCall:
        """One chat completion, retried on transient failures.

        Raises :class:`LLMConfigError` (no point retrying), :class:`LLMUnavailableError` (retries
        exhausted; ``.call`` holds the record) or :class:`BudgetExceededError`.
        """
        msgs = _validate_messages(messages)
        if check_budget and self.budget is not None:
            reason = self.budget.exceeded()
            if reason is not None:
                raise BudgetExceededError(reason)
        litellm = _litellm()
        retryable, fatal = _error_classes(litellm)
        call = LLMCall(prompt_hash=prompt_hash(msgs), model=self.config.model, messages=msgs)
        started = time.monotonic()
        last_error: BaseException | None = None
        for attempt in range(1, self.config.max_retries + 2):
            call.attempts = attempt
            try:
                response = litellm.completion(**self._request(msgs))
            except fatal as exc:
                call.error = _describe(exc)
                call.latency_s = time.monotonic() - started
                raise LLMConfigError(self._config_message(exc, litellm)) from exc
            except retryable as exc:
                if _is_quota_exhausted(exc):  # a 429 that waiting does not fix
                    call.error = _describe(exc)
                    call.latency_s = time.monotonic() - started
                    raise LLMConfigError(self._config_message(exc, litellm)) from exc
                last_error = exc
            except litellm.APIError as exc:  # generic provider error: retry only server-side ones
                status = getattr(exc, "status_code", None)
                if isinstance(status, int) and 400 <= status < 500:
                    call.error = _describe(exc)
                    call.latency_s = time.monotonic() - started
                    raise LLMConfigError(self._config_message(exc, litellm)) from exc
                last_error = exc
            else:
                self._fill(call, response, litellm)
                call.latency_s = time.monotonic() - started
                if self.budget is not None:
                    self.budget.record(call)
                return call
            if attempt <= self.config.max_retries:
                time.sleep(self._backoff_s(attempt, last_error))
        call.latency_s = time.monotonic() - started
        call.error = _describe(last_error) if last_error is not None else "unknown error"
        raise LLMUnavailableError(
            f"model {self.config.model!r} failed {call.attempts} times; last error: {call.error}",
            call,
        )

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "timeout": cfg.timeout_s,
            "max_retries": 0,  # retries are ours, so they are counted and backed off once
            "drop_params": True,  # e.g. reasoning models reject a temperature
        }
        if cfg.api_base:
            request["api_base"] = cfg.api_base
        if self._api_key:
            request["api_key"] = self._api_key
        if cfg.max_tokens_reply is not None:
            request["max_tokens"] = cfg.max_tokens_reply
        return request

    def _backoff_s(self, attempt: int, error: BaseException | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins if it asks for longer."""
        cfg = self.config
        delay = min(cfg.backoff_max_s, cfg.backoff_base_s * 2.0 ** (attempt - 1))
        delay *= random.uniform(0.5, 1.0)
        hinted = _retry_after_s(error) if error is not None else None
        if hinted is not None:
            delay = max(delay, min(hinted, cfg.backoff_max_s))
        return delay

    def _fill(self, call: LLMCall, response: Any, litellm: ModuleType) -> None:
        """Copy reply text, usage and cost from a litellm ModelResponse into the record."""
        choice = response.choices[0] if getattr(response, "choices", None) else None
        message = getattr(choice, "message", None)
        call.reply = getattr(message, "content", None) or ""
        call.finish_reason = getattr(choice, "finish_reason", None)
        call.response_id = getattr(response, "id", None)
        usage = getattr(response, "usage", None)
        call.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        call.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # litellm raises for models it has no price for
            cost = None
        if cost is not None and cost > 0:
            call.cost_usd, call.cost_known = float(cost), True
        else:
            call.cost_usd, call.cost_known = 0.0, False

    def _config_message(self, exc: BaseException, litellm: ModuleType) -> str:
        """Turn a non-retryable provider error into advice."""
        model = self.config.model
        where = f" at {self.config.api_base}" if self.config.api_base else ""
        detail = _describe(exc)
        if isinstance(exc, litellm.AuthenticationError | litellm.PermissionDeniedError):
            keys = _missing_credentials(model) or ["the provider's API key variable"]
            return (
                f"the provider{where} rejected the credentials for model {model!r}: "
                f"set {' or '.join(keys)} to a valid key, or pass --api-base for a local server "
                f"({detail})"
            )
        if _is_quota_exhausted(exc):
            return (
                f"the account behind model {model!r}{where} has no quota left: add credit or "
                f"use another key or model ({detail})"
            )
        if isinstance(exc, litellm.NotFoundError):
            return (
                f"model {model!r} was not found{where}: check --model (litellm needs a provider "
                f"prefix such as openai/, anthropic/, ollama/) and --api-base ({detail})"
            )
        if isinstance(exc, litellm.ContextWindowExceededError):
            return f"the prompt is too long for model {model!r}: use a larger model ({detail})"
        if "LLM Provider NOT provided" in str(exc):
            return (
                f"litellm does not know the provider of model {model!r}: prefix it, e.g. "
                f"openai/{model} with --api-base for an OpenAI-compatible server ({detail})"
            )
        return f"model {model!r}{where} refused the request; check --model/--api-base ({detail})"


def _error_classes(
    litellm: ModuleType,
) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(retryable, fatal) litellm exception classes; fatal ones are checked first."""
    retryable = (
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        litellm.Timeout,
        litellm.APIConnectionError,
    )
    fatal = (
        litellm.AuthenticationError,
        litellm.PermissionDeniedError,
        litellm.NotFoundError,
        litellm.BadRequestError,
        litellm.UnprocessableEntityError,
    )
    return retryable, fatal


def _is_quota_exhausted(exc: BaseException) -> bool:
    """OpenAI-style 429 for an exhausted balance, as opposed to a rate limit."""
    if getattr(exc, "status_code", None) != 429:
        return False
    body = getattr(exc, "body", None)
    codes = {body.get("code"), body.get("type")} if isinstance(body, dict) else set()
    return "insufficient_quota" in codes or "insufficient_quota" in str(exc)


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if len(text) > 500:
        text = text[:497] + "..."
    return f"{type(exc).__name__}: {text}"


def _validate_messages(messages: Sequence[Message]) -> list[Message]:
    """Copy and check chat messages early, where a mistake is still ours and not the provider's."""
    if not messages:
        raise ValueError("messages must not be empty")
    out: list[Message] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise ValueError(f"message {i} must be a dict with 'role' and 'content'")
        out.append(dict(message))
    return out
