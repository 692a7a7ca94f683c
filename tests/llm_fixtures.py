"""Pytest fixtures around the scripted LLM server (import them from ``tests/conftest.py``).

``from tests.llm_fixtures import no_remote_network, scripted_llm  # noqa: F401``
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from tests.llm_server import Responder, ScriptedLLMServer, Step

ScriptedLLMFactory = Callable[..., ScriptedLLMServer]

_LOOPBACK = {"127.0.0.1", "localhost", "::1", "::ffff:127.0.0.1"}


def _is_loopback(address: object) -> bool:
    if isinstance(address, tuple) and address:
        return str(address[0]) in _LOOPBACK
    return isinstance(address, str | bytes)  # AF_UNIX paths stay on this machine


def block_remote_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse DNS look-ups and connections to anything but 127.0.0.1 until the test ends.

    A guard for LLM tests: a mistake in provider routing must fail the test, not reach the internet.
    """
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def refuse(what: object) -> OSError:
        return OSError(f"test network guard: {what!r} is not 127.0.0.1")

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_loopback(address):
            raise refuse(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_loopback(address):
            raise refuse(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name is not None and str(name) not in _LOOPBACK:
            raise refuse(name)
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def no_remote_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only 127.0.0.1 is reachable during the test (see :func:`block_remote_network`)."""
    block_remote_network(monkeypatch)


@pytest.fixture
def scripted_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedLLMFactory]:
    """A factory that starts scripted servers on 127.0.0.1; all of them stop at teardown.

    Remote network access is blocked for the test meanwhile. Usage::

        server = scripted_llm([{"status": 429}, "```python\\ndef compute_reward(...): ...\\n```"])
        client = LLMClient(LLMConfig(model=server.model, api_base=server.base_url))

    Arguments: ``script`` (list of steps), ``responder=`` (callable request_json -> step, used
    instead of the script), ``default_reply=`` (repeated once the script is exhausted; without
    it the server answers HTTP 500).
    """
    block_remote_network(monkeypatch)
    servers: list[ScriptedLLMServer] = []

    def start(
        script: Iterable[Step] = (),
        *,
        responder: Responder | None = None,
        default_reply: str | None = None,
    ) -> ScriptedLLMServer:
        server = ScriptedLLMServer(script, responder=responder, default_reply=default_reply)
        servers.append(server.start())
        return server

    yield start
    for server in servers:
        server.stop()
