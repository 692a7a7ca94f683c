"""The judging page: two rollout videos side by side, a person says which is better.

A Starlette app, served by uvicorn on 127.0.0.1 only, on a free port. Every request needs the
session's one-time token (`secrets.token_urlsafe`), compared in constant time: in the query
(`?token=`) of a GET, in a form field or the `X-Rewardsmith-Token` header of a POST. A POST also
needs the page's CSRF token (a second secret, embedded in the page's form, never in a URL) and is
refused when the browser says it comes from elsewhere (`Origin` not this server's own,
`Sec-Fetch-Site` other than same-origin). The Host header must name the loopback (no DNS
rebinding). Videos are served from the contestants' checked files, looked up by key, never by a
path from the request. Model text (reward code, keys) is escaped, its control characters shown.

Every choice is on disk (`rewardsmith.runs.judgements`) before the page moves on.
"""

from __future__ import annotations

import html
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route

from rewardsmith.judging.pairs import Contestant, next_pair, remaining
from rewardsmith.judging.scores import Score, fit_scores, ranked
from rewardsmith.runs.judgements import CHOICES, MAX_FEEDBACK_CHARS, RoundJudgements
from rewardsmith.untrusted_text import plain

LOOPBACK = "127.0.0.1"
MAX_BODY = 256 * 1024
TOKEN_HEADER = "x-rewardsmith-token"
CSRF_HEADER = "x-csrf-token"
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})
_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; media-src 'self'; style-src 'unsafe-inline'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    # The token is in the URL: never sent to another site. ("no-referrer" would make the browser
    # send `Origin: null` with the page's own form posts, which the origin check refuses.)
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


@dataclass
class JudgingSession:
    """One person judging one round: the contestants, the round's files, and the secrets.

    A round judged (and marked done) before can be opened again: more choices add to the stored
    ones, and "done" marks it done again."""

    run_id: str
    round: int
    contestants: list[Contestant]
    files: RoundJudgements
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    done: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def contestant(self, key: str) -> Contestant | None:
        """The contestant named `key`, or None for any other text."""
        return next((c for c in self.contestants if c.key == key), None)

    def scores(self) -> dict[str, Score]:
        """Bradley-Terry scores of every contestant from the choices stored so far."""
        return fit_scores(self.files.judgements(), [c.key for c in self.contestants])


def make_app(session: JudgingSession) -> Starlette:
    """The judging app for `session`: `/`, `/video/<key>`, POST `/choose`, `/feedback`, `/done`."""

    async def page(request: Request) -> Response:
        refused = _check_get(request, session)
        if refused is not None:
            return refused
        return _html(render_page(session))

    async def video(request: Request) -> Response:
        refused = _check_get(request, session)
        if refused is not None:
            return refused
        contestant = session.contestant(request.path_params["key"])
        if contestant is None or contestant.video is None or not contestant.video.is_file():
            return PlainTextResponse("no such video", status_code=404)
        return FileResponse(
            contestant.video,
            media_type="video/mp4",
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"},
        )

    async def choose(form: dict[str, str]) -> Response:
        with session.lock:
            if session.done.is_set():
                return PlainTextResponse("judging this round is over", status_code=409)
            _save_feedback(session, form)
            left, right = (
                session.contestant(form.get("left", "")),
                session.contestant(form.get("right", "")),
            )
            choice = form.get("choice", "")
            if left is None or right is None or left.key == right.key or choice not in CHOICES:
                return PlainTextResponse("not a pair of this round, or no choice", 400)
            pair = frozenset((left.key, right.key))
            if all(j.pair != pair for j in session.files.judgements()):  # a resubmit: once
                session.files.append(left.key, right.key, choice)
        return _back(session)

    async def feedback(form: dict[str, str]) -> Response:
        with session.lock:
            _save_feedback(session, form)
        return _back(session)

    async def done(form: dict[str, str]) -> Response:
        # The closing page itself, not a redirect to it: the run stops this server as soon as
        # `done` is set, so a second request for the page could find nothing listening.
        with session.lock:
            _save_feedback(session, form)
            if not session.done.is_set():
                session.files.mark_done()
                session.done.set()
        return _html(render_page(session))

    return Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Route("/video/{key:path}", video, methods=["GET"]),
            Route("/choose", _post(session, choose), methods=["POST"]),
            Route("/feedback", _post(session, feedback), methods=["POST"]),
            Route("/done", _post(session, done), methods=["POST"]),
        ]
    )


def render_page(session: JudgingSession) -> str:
    """The page: the next pair (or that none is left), the feedback form, and the scores."""
    judgements = session.files.judgements()
    scores = fit_scores(judgements, [c.key for c in session.contestants])
    pair = None if session.done.is_set() else next_pair(session.contestants, judgements, scores)
    left_count = remaining(session.contestants, judgements)
    hidden = _hidden("token", session.token) + _hidden("csrf", session.csrf)
    parts = [
        f"<h1>Judging {_e(session.run_id)}, round {session.round}</h1>",
        f"<p id='status'><span id='remaining'>{left_count}</span> pair(s) left;"
        f" <span id='choices'>{len(judgements)}</span> choice(s) stored.</p>",
    ]
    if session.done.is_set():
        parts.append(
            "<p id='done' class='note'>Judging this round is done; you may close this page.</p>"
        )
    elif pair is None:
        parts.append("<p id='no-pair' class='note'>Every pair of this round has been judged.</p>")
    missing = [c.key for c in session.contestants if c.video is None]
    if missing:
        parts.append(f"<p class='note'>No video (not judged): {_e(', '.join(missing))}</p>")
    parts.append(f"<form method='post' action='/feedback' id='judge'>{hidden}")
    if pair is not None:
        left, right = pair
        parts.append(
            "<div class='pair'>"
            + _side("left", left, session.token)
            + _side("right", right, session.token)
            + "</div>"
            + _hidden("left", left.key)
            + _hidden("right", right.key)
            + "<p class='buttons'>"
            + "".join(
                f"<button type='submit' formaction='/choose' name='choice' value='{v}'"
                f" id='choose-{v}'>{label}</button>"
                for v, label in (
                    ("left", "left is better"),
                    ("right", "right is better"),
                    ("both_bad", "both bad"),
                )
            )
            + "</p>"
        )
    if not session.done.is_set():
        parts.append(
            "<h2>Feedback for the next round</h2>"
            f"<textarea name='text' id='feedback' rows='5' maxlength='{MAX_FEEDBACK_CHARS}'>"
            f"{_e((session.files.feedback() or '').strip())}</textarea>"
            "<p class='buttons'><button type='submit' formaction='/feedback' id='save'>"
            "save feedback</button> <button type='submit' formaction='/done' id='finish'>"
            "done</button></p>"
        )
    parts.append("</form>")
    parts.append(_scores_table(session, scores))
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>rewardsmith judge: {_e(session.run_id)}</title><style>{_CSS}</style></head>"
        "<body><main>" + "".join(parts) + "</main></body></html>"
    )


class JudgingServer:
    """The app served by uvicorn on 127.0.0.1 in a background thread, on `port` (0: a free one,
    read back once bound). `url` carries the token; `stop` shuts it down."""

    def __init__(self, session: JudgingSession, port: int = 0) -> None:
        import uvicorn

        self.session = session
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind((LOOPBACK, port))
        self._socket.listen(64)
        self.port: int = self._socket.getsockname()[1]
        # log_config=None: uvicorn's default applies `logging.config.dictConfig`, which closes
        # every logging handler in the process (the host program's, and absl's, which closes the
        # stream it was made with, even a caller's captured stderr).
        config = uvicorn.Config(
            make_app(session),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address, with the session's token."""
        return f"http://{LOOPBACK}:{self.port}/?token={self.session.token}"

    def start(self, wait_s: float = 15.0) -> JudgingServer:
        """Serve in a background thread; return once uvicorn accepts connections."""
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + wait_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the judging server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Finish the requests in flight and stop serving."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._socket.close()

    def __enter__(self) -> JudgingServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _post(
    session: JudgingSession, handler: Callable[[dict[str, str]], Awaitable[Response]]
) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a POST handler in the token, origin and CSRF checks, and parse its form."""

    async def endpoint(request: Request) -> Response:
        refused = _check_host(request) or _check_origin(request)
        if refused is not None:
            return refused
        form = await _form(request)
        if form is None:
            return _forbidden("a form (application/x-www-form-urlencoded) within the size limit")
        token = form.get("token") or request.headers.get(TOKEN_HEADER, "")
        if not _same(token, session.token):
            return _forbidden("the session token")
        csrf = form.get("csrf") or request.headers.get(CSRF_HEADER, "")
        if not _same(csrf, session.csrf):
            return _forbidden("the page's CSRF token")
        return await handler(form)

    return endpoint


def _check_get(request: Request, session: JudgingSession) -> Response | None:
    refused = _check_host(request)
    if refused is not None:
        return refused
    if not _same(request.query_params.get("token", ""), session.token):
        return _forbidden("the session token (?token=)")
    return None


def _check_host(request: Request) -> Response | None:
    """Only a loopback Host: a page of another site resolved to 127.0.0.1 is refused."""
    host = urlsplit("//" + request.headers.get("host", "")).hostname
    return None if host in _LOCAL_HOSTS else _forbidden("a loopback Host header")


def _check_origin(request: Request) -> Response | None:
    """Refuse a POST the browser says comes from another site (absent headers: a non-browser
    client, which the tokens alone check)."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return _forbidden("a same-origin request")
    origin = request.headers.get("origin")
    if origin is not None:
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin.rstrip("/") != own:
            return _forbidden("a same-origin request")
    return None


async def _form(request: Request) -> dict[str, str] | None:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return None
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        return None
    return {name: values[0] for name, values in fields.items()}


def _save_feedback(session: JudgingSession, form: dict[str, Any]) -> None:
    """Keep the textarea's text with any button pressed, so nothing typed is lost."""
    text = form.get("text")
    if text is None:
        return
    text = text[:MAX_FEEDBACK_CHARS]
    if text.strip() != (session.files.feedback() or "").strip():
        session.files.write_feedback(text)


def _same(given: str, expected: str) -> bool:
    return secrets.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _forbidden(what: str) -> Response:
    return PlainTextResponse(f"forbidden: this needs {what}", status_code=403)


def _back(session: JudgingSession) -> Response:
    return RedirectResponse(f"/?token={quote(session.token)}", status_code=303)


def _html(body: str) -> Response:
    return HTMLResponse(body, headers=_SECURITY_HEADERS)


def _hidden(name: str, value: str) -> str:
    return f"<input type='hidden' name='{name}' value='{_e(value)}'>"


def _side(side: str, contestant: Contestant, token: str) -> str:
    src = f"/video/{quote(contestant.key, safe='/')}?token={quote(token)}"
    code = (
        f"<details><summary>reward code</summary><pre>{_e(contestant.code)}</pre></details>"
        if contestant.code
        else ""
    )
    return (
        f"<figure class='side' id='{side}' data-key='{_e(contestant.key)}'>"
        f"<figcaption>{side}: <b>{_e(contestant.label)}</b>, fitness {_f(contestant.fitness)}</figcaption>"
        f"<video controls autoplay loop muted playsinline preload='auto' src='{_e(src)}'>"
        "</video>" + code + "</figure>"
    )


def _scores_table(session: JudgingSession, scores: dict[str, Score]) -> str:
    fitness = {c.key: c.fitness for c in session.contestants}
    labels = {c.key: c.label for c in session.contestants}
    ordered = ranked(scores)
    rows = "".join(
        f"<tr><td>{_e(labels.get(s.key, s.key))}</td><td class='num'>{_f(fitness.get(s.key))}</td>"
        f"<td class='num'>{_score_text(s)}</td><td class='num'>{s.choices}</td>"
        f"<td class='num'>{s.wins}</td></tr>"
        for s in ordered
    )
    return (
        "<h2>Scores so far</h2><table id='scores'><thead><tr><th>candidate</th><th>fitness</th>"
        "<th>human score (Bradley-Terry, ± s.e.)</th><th>choices</th><th>wins</th></tr></thead>"
        f"<tbody>{rows}</tbody></table><p class='note'>A score is a log-odds of being preferred,"
        " relative to the mean of the compared candidates (0): +1 beats a 0 at odds of e:1."
        ' "Both bad" counts as a loss of both against a fixed baseline.</p>'
        + _incumbent_note(session)
    )


def _incumbent_note(session: JudgingSession) -> str:
    """Why the best so far is on the page: its choices tie this round's scale to earlier ones."""
    incumbent = next((c for c in session.contestants if c.is_incumbent), None)
    if incumbent is None:
        return ""
    return (
        f"<p class='note' id='incumbent-note'>{_e(incumbent.key)} is the run's best before this"
        " round: comparing it with this round's candidates puts them on one scale, so that"
        " selection on human scores (--fitness human or blend) can tell whether one of them"
        " takes over.</p>"
    )


def _score_text(score: Score) -> str:
    if score.score is None or score.stderr is None:
        return "-"
    return f"{score.score:+.2f} ± {score.stderr:.2f}"


def _e(value: Any) -> str:
    """HTML-escaped, control and bidi characters shown as escapes (model-written text)."""
    return html.escape(plain(value), quote=True)


def _f(value: float | None) -> str:
    return "-" if value is None else format(value, ".4g")


_CSS = """
body { font: 15px/1.5 system-ui, sans-serif; color: #1f2937; background: #f9fafb; margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 1rem 1.5rem; }
.pair { display: flex; gap: 1rem; }
.side { flex: 1 1 0; min-width: 0; margin: 0; background: #fff; padding: .5rem; border: 1px solid #e5e7eb; }
.side video { width: 100%; max-height: 60vh; background: #000; }
pre { overflow: auto; max-height: 24rem; background: #f3f4f6; padding: .5rem; font-size: 12px; }
button { font-size: 1rem; padding: .4rem .9rem; margin-right: .5rem; }
textarea { width: 100%; }
table { border-collapse: collapse; } td, th { padding: .2rem .6rem; border-bottom: 1px solid #e5e7eb; }
.num { text-align: right; font-variant-numeric: tabular-nums; } .note { color: #6b7280; }
"""
