"""A scripted OpenAI-compatible chat server on 127.0.0.1: test equipment, not the product.

No LLM is reachable from our machines, so the tests run the real client code (litellm, the openai
SDK, httpx) against this server. It replays a script of steps, in order:

- ``"some text"``: a normal reply with that content;
- ``{"status": 429}`` / ``{"status": 500}``: an HTTP error (optional ``"body"``, ``"retry_after"``);
- ``{"delay_s": 2.0, "text": "..."}``: a slow reply (sent after the delay);
- ``{"text": "...", "chunk_delay_s": 0.2}``: with ``stream: true``, a slow stream;
- ``{"hang_up": True}``: close the connection without answering (a connection error);
- optional keys on reply steps: ``prompt_tokens``, ``completion_tokens``, ``finish_reason``,
  ``model`` (the model name reported back; default: the request's model).

A ``responder(request_json) -> step`` callable can replace the fixed script, so a test picks replies
from the prompt. When the script runs out the server repeats ``default_reply`` if one is given, and
otherwise answers HTTP 500 (so a test that makes more calls than it scripted fails loudly).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

Step = str | dict[str, Any]
Responder = Callable[[dict[str, Any]], Step]

MODEL = "openai/scripted"
"""The litellm model string to use with this server (OpenAI protocol, any model name)."""


def count_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: one token per whitespace-separated word."""
    return len(text.split())


class ScriptedLLMServer:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint that replays a script."""

    def __init__(
        self,
        script: Iterable[Step] = (),
        *,
        responder: Responder | None = None,
        default_reply: str | None = None,
    ) -> None:
        self._script: deque[Step] = deque(script)
        self._responder = responder
        self._default_reply = default_reply
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[dict[str, Any]] = []
        """Every request body received, in arrival order."""
        self.headers: list[dict[str, str]] = []
        """The HTTP headers of every request, in the same order as ``requests``."""

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        """Bind to an ephemeral port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"scripted-llm-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; slow replies still sleeping are cut short (their sockets are closed)."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses and bookkeeping -------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The ``api_base`` to give the client: ``http://127.0.0.1:{port}/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def model(self) -> str:
        """The litellm model string for this server."""
        return MODEL

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    @property
    def remaining(self) -> int:
        """Steps of the fixed script not yet consumed."""
        with self._lock:
            return len(self._script)

    def push(self, *steps: Step) -> None:
        """Append steps to the script (e.g. between two phases of a test)."""
        with self._lock:
            self._script.extend(steps)

    def last_user_message(self, index: int = -1) -> str:
        """The content of the last user message of request ``index``: handy in assertions."""
        with self._lock:
            body = self.requests[index]
        users = [m for m in body.get("messages", []) if m.get("role") == "user"]
        content = users[-1].get("content", "") if users else ""
        return content if isinstance(content, str) else json.dumps(content)

    # -- the script ----------------------------------------------------------------------------

    def _next_step(self, body: dict[str, Any], headers: dict[str, str]) -> Step:
        """Record the request and pick its step, atomically, so concurrent calls stay ordered."""
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._responder is None and self._script:
                return self._script.popleft()
        if self._responder is not None:
            return self._responder(body)
        if self._default_reply is not None:
            return self._default_reply
        return {"status": 500, "body": {"error": {"message": "the test script is exhausted"}}}

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True when the sleep ran to its end."""
        return not self._stopping.wait(seconds)


def _error_body(status: int) -> dict[str, Any]:
    kinds = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_exceeded",
    }
    kind = kinds.get(status, "server_error")
    return {"error": {"message": f"scripted HTTP {status}", "type": kind, "code": kind}}


def _make_handler(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output quiet."""

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [{"id": "scripted"}]})
            else:
                self._send_json(404, _error_body(404))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send_json(404, _error_body(404))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send_json(400, _error_body(400))
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            step = server._next_step(body, headers)
            try:
                self._answer(body, step)
            except (BrokenPipeError, ConnectionResetError, OSError):
                # The client gave up (timeout) or the server is stopping: nothing to tell.
                self.close_connection = True

        def _answer(self, body: dict[str, Any], step: Step) -> None:
            spec: dict[str, Any] = {"text": step} if isinstance(step, str) else dict(step)
            delay = float(spec.get("delay_s", 0.0))
            if delay > 0 and not server._sleep(delay):
                self.close_connection = True
                return
            if spec.get("hang_up"):
                self.close_connection = True
                self.connection.close()
                return
            status = int(spec.get("status", 200))
            if status != 200:
                extra = {}
                if "retry_after" in spec:
                    extra["Retry-After"] = str(spec["retry_after"])
                self._send_json(status, spec.get("body") or _error_body(status), extra)
                return
            text = str(spec.get("text", ""))
            prompt_text = " ".join(
                m.get("content", "") if isinstance(m.get("content"), str) else ""
                for m in body.get("messages", [])
            )
            usage = {
                "prompt_tokens": int(spec.get("prompt_tokens", count_tokens(prompt_text))),
                "completion_tokens": int(spec.get("completion_tokens", count_tokens(text))),
            }
            usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
            model = str(spec.get("model", body.get("model", "scripted")))
            finish = str(spec.get("finish_reason", "stop"))
            completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
            if body.get("stream"):
                self._stream(body, spec, completion_id, model, text, finish, usage)
                return
            self._send_json(
                200,
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": finish,
                            "logprobs": None,
                        }
                    ],
                    "usage": usage,
                },
            )

        def _stream(
            self,
            body: dict[str, Any],
            spec: dict[str, Any],
            completion_id: str,
            model: str,
            text: str,
            finish: str,
            usage: dict[str, int],
        ) -> None:
            """Server-sent events, one chunk per line of the reply (chunked transfer encoding)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk_delay = float(spec.get("chunk_delay_s", 0.0))
            created = int(time.time())

            def event(delta: dict[str, Any], reason: str | None, **extra: Any) -> dict[str, Any]:
                choice = {"index": 0, "delta": delta, "finish_reason": reason}
                return {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    **extra,
                }

            pieces = text.splitlines(keepends=True) or [""]
            self._send_event(event({"role": "assistant", "content": ""}, None))
            for piece in pieces:
                if chunk_delay > 0 and not server._sleep(chunk_delay):
                    return
                self._send_event(event({"content": piece}, None))
            self._send_event(event({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                self._send_event({**event({}, None), "choices": [], "usage": usage})
            self._send_chunk(b"data: [DONE]\n\n")
            self._send_chunk(b"")

        def _send_event(self, payload: dict[str, Any]) -> None:
            self._send_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

        def _send_chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _send_json(
            self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None
        ) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()

    return Handler
