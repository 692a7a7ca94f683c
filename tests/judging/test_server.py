"""The judging page's checks and behaviour: the token on every request, the CSRF token and the
origin checks on every POST, choices stored as they are made, model text escaped, and the real
uvicorn server on 127.0.0.1."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from rewardsmith.judging.pairs import Contestant
from rewardsmith.judging.server import JudgingServer, JudgingSession, make_app
from rewardsmith.runs.judgements import RoundJudgements

BASE = "http://127.0.0.1:8123"
EVIL_CODE = 'def compute_reward(s, a, n):\n    """</pre><script>alert(1)</script>"""\n    return 0'


@pytest.fixture
def session(tmp_path: Path) -> JudgingSession:
    videos = []
    for i in range(3):
        video = tmp_path / f"v{i}.mp4"
        video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes([i]) * 100)
        videos.append(video)
    pool = [
        Contestant("r00c00", videos[0], 10.0, EVIL_CODE),
        Contestant("r00c01", videos[1], 20.0, "def compute_reward(s, a, n):\n    return 1"),
        Contestant("r00c02", videos[2], 30.0, None),
    ]
    return JudgingSession("run-1", 0, pool, RoundJudgements(tmp_path / "run", 0))


@pytest.fixture
def client(session: JudgingSession) -> TestClient:
    return TestClient(make_app(session), base_url=BASE, follow_redirects=False)


def shown_pair(page: str) -> tuple[str, str]:
    left = re.search(r"name='left' value='([^']*)'", page)
    right = re.search(r"name='right' value='([^']*)'", page)
    assert left and right, page
    return left.group(1), right.group(1)


def form(session: JudgingSession, **fields: str) -> dict[str, str]:
    return {"token": session.token, "csrf": session.csrf, **fields}


SAME_ORIGIN = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}


def test_every_request_needs_the_token(client: TestClient, session: JudgingSession) -> None:
    assert client.get("/").status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    assert client.get("/video/r00c00").status_code == 403
    assert client.get(f"/video/r00c00?token={session.token}x").status_code == 403
    data = form(session, left="r00c00", right="r00c01", choice="left")
    del data["token"]
    assert client.post("/choose", data=data, headers=SAME_ORIGIN).status_code == 403
    assert session.files.judgements() == []
    assert client.get(f"/?token={session.token}").status_code == 200


def test_a_post_needs_the_csrf_token(client: TestClient, session: JudgingSession) -> None:
    for csrf in ("", "wrong", session.token):
        data = form(session, left="r00c00", right="r00c01", choice="left", csrf=csrf)
        assert client.post("/choose", data=data, headers=SAME_ORIGIN).status_code == 403
    assert client.post("/done", data=form(session, csrf="nope")).status_code == 403
    assert session.files.judgements() == [] and not session.done.is_set()


def test_a_cross_origin_post_is_refused(client: TestClient, session: JudgingSession) -> None:
    data = form(session, left="r00c00", right="r00c01", choice="left")
    for headers in (
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:9999"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ):
        assert client.post("/choose", data=data, headers=headers).status_code == 403, headers
    # a page of another site whose name resolves to 127.0.0.1 (DNS rebinding)
    assert (
        client.get(f"/?token={session.token}", headers={"Host": "evil.example"}).status_code == 403
    )
    # JSON or multipart instead of a plain form
    assert client.post("/choose", json=data, headers=SAME_ORIGIN).status_code == 403
    assert session.files.judgements() == []


def test_a_choice_is_stored_and_the_next_pair_changes(
    client: TestClient, session: JudgingSession
) -> None:
    page = client.get(f"/?token={session.token}").text
    assert "<span id='remaining'>3</span>" in page
    first = shown_pair(page)
    reply = client.post(
        "/choose",
        data=form(session, left=first[0], right=first[1], choice="right", text="too jittery"),
        headers=SAME_ORIGIN,
    )
    assert reply.status_code == 303 and reply.headers["location"] == f"/?token={session.token}"
    stored = session.files.judgements()
    assert [(j.left, j.right, j.choice) for j in stored] == [(*first, "right")]
    assert session.files.feedback() == "too jittery\n"  # the textarea travels with any button
    page = client.get(f"/?token={session.token}").text
    assert "<span id='remaining'>2</span>" in page
    assert set(shown_pair(page)) != set(first)
    assert "too jittery</textarea>" in page
    # the same pair again (a resubmitted form) is stored once
    client.post("/choose", data=form(session, left=first[1], right=first[0], choice="left"))
    assert len(session.files.judgements()) == 1
    # a key that is not a contestant of this round
    bad = form(session, left="r00c00", right="../../etc/passwd", choice="left")
    assert client.post("/choose", data=bad).status_code == 400


def test_model_text_is_escaped_in_the_page(client: TestClient, session: JudgingSession) -> None:
    pages = []
    for _ in range(3):
        page = client.get(f"/?token={session.token}").text
        pages.append(page)
        left, right = shown_pair(page)
        client.post("/choose", data=form(session, left=left, right=right, choice="left"))
    text = "".join(pages)
    assert "<script>" not in text
    assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "Every pair of this round has been judged" in client.get(f"/?token={session.token}").text


def test_videos_are_served_by_key_only(client: TestClient, session: JudgingSession) -> None:
    reply = client.get(f"/video/r00c01?token={session.token}")
    assert reply.status_code == 200 and reply.headers["content-type"] == "video/mp4"
    assert reply.content == session.contestants[1].video.read_bytes()  # type: ignore[union-attr]
    ranged = client.get(f"/video/r00c01?token={session.token}", headers={"Range": "bytes=0-3"})
    assert ranged.status_code == 206 and len(ranged.content) == 4
    for key in ("r00c09", "..%2F..%2Fetc%2Fpasswd", "../v0.mp4", "v0.mp4"):
        assert client.get(f"/video/{key}?token={session.token}").status_code == 404, key


def test_done_ends_the_session(client: TestClient, session: JudgingSession) -> None:
    reply = client.post("/done", data=form(session, text="good round"), headers=SAME_ORIGIN)
    assert reply.status_code == 200 and session.done.is_set()
    assert "id='done'" in reply.text
    assert session.files.done() is not None and session.files.feedback() == "good round\n"
    page = client.get(f"/?token={session.token}").text
    assert "id='done'" in page and "name='choice'" not in page
    data = form(session, left="r00c00", right="r00c01", choice="left")
    assert client.post("/choose", data=data).status_code == 409


def test_the_page_sends_protective_headers(client: TestClient, session: JudgingSession) -> None:
    headers = client.get(f"/?token={session.token}").headers
    assert "default-src 'none'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "same-origin"
    assert headers["x-frame-options"] == "DENY"


def test_the_real_server_listens_on_the_loopback_with_its_token(session: JudgingSession) -> None:
    with JudgingServer(session) as server:
        assert server.port > 0
        assert server.url.startswith(f"http://127.0.0.1:{server.port}/?token=")
        base = f"http://127.0.0.1:{server.port}"
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.get("/").status_code == 403
            page = http.get(server.url)
            assert page.status_code == 200
            left, right = shown_pair(page.text)
            data = form(session, left=left, right=right, choice="both_bad")
            assert (
                http.post("/choose", data=data, headers={"Origin": "http://evil"}).status_code
                == 403
            )
            assert http.post("/choose", data=data, headers={"Origin": base}).status_code == 303
        assert [j.choice for j in session.files.judgements()] == ["both_bad"]
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url, timeout=2)


def test_done_shows_its_page_though_the_run_stops_serving_at_once(
    session: JudgingSession,
) -> None:
    """The run stops the server the moment `done` is set; the page that says so came with the
    answer to the click. It was a redirect, and a browser's request for it found nothing
    listening when the run was quicker (a loaded CI host)."""
    server = JudgingServer(session).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            reply = http.post("/done", data=form(session), headers={"Origin": base})
            assert session.done.is_set()
            server.stop()  # as the run does on seeing `done`, before the browser asks for more
            assert reply.status_code == 200 and "id='done'" in reply.text
    finally:
        server.stop()


def test_serving_leaves_the_host_programs_logging_alone(
    session: JudgingSession, tmp_path: Path
) -> None:
    """uvicorn's default log config runs dictConfig, which closed every handler in the process:
    absl's closed the stream it holds, pytest's captured stderr, and failed the rest of the run."""
    host_log = logging.getLogger("host-program")
    handler = logging.FileHandler(tmp_path / "host.log")
    host_log.addHandler(handler)
    try:
        with JudgingServer(session):
            assert handler.stream is not None and not handler.stream.closed
            host_log.warning("still logging")
        assert handler in host_log.handlers
    finally:
        host_log.removeHandler(handler)
        handler.close()
    assert "still logging" in (tmp_path / "host.log").read_text()
