"""``chats ui``'s routes through Starlette's test client, on a real journal (the search corpus, imported).

The browser tests (tests/ui/test_browser.py) check what a person sees; these check each route's
answer and every refusal of the guard, fast and without a browser.
"""

import re
from html.parser import HTMLParser

import pytest
from starlette.testclient import TestClient

from claude_chats.localstore.search import LocalSearch
from claude_chats.search.searcher import Searcher
from claude_chats.ui import guard
from claude_chats.ui.app import create_app

TOKEN = "t0ken-for-tests"
HOST = "127.0.0.1:8765"


@pytest.fixture
def app(corpus_journal):
    journal = corpus_journal
    searcher = Searcher(LocalSearch.open(journal.path), None, None, redact=True, redact_results=True)
    yield create_app(searcher, TOKEN, [HOST, "localhost:8765"], journal_path=journal.path,
                     status=lambda: {"config_file": "/x", **_status()})
    searcher.close()


def _status():
    from claude_chats import status

    return status.collect(check_postgres=False, check_provider=False)


def client(app, token=True):
    c = TestClient(app, base_url=f"http://{HOST}")
    if token:
        c.cookies.set(guard.COOKIE, TOKEN)
    return c


def test_without_the_token_every_route_is_refused(app):
    c = client(app, token=False)
    for path in ("/", "/search?q=docker", "/sessions", "/status", "/session/s-docker", "/static/app.js",
                 "/session/s-docker/export.md", "/events?session=s-docker"):
        r = c.get(path, follow_redirects=False)
        assert r.status_code == 403, path
        assert "docker compose" not in r.text
    c.cookies.set(guard.COOKIE, "wrong")
    assert c.get("/search").status_code == 403


def test_the_token_in_the_url_becomes_a_cookie_and_leaves_the_url(app):
    c = client(app, token=False)
    r = c.get(f"/search?q=docker&token={TOKEN}", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"] == "/search?q=docker"
    cookie = r.headers["set-cookie"]
    assert f"{guard.COOKIE}={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert c.get("/search?q=docker").status_code == 200
    assert c.get("/search?token=nope", follow_redirects=False).status_code == 403


def test_a_foreign_host_header_is_refused_even_with_the_token(app):
    c = client(app)
    for host in ("evil.example:8765", "127.0.0.1:9999", "127.0.0.1", "attacker.127.0.0.1.nip.io:8765"):
        assert c.get("/search", headers={"host": host}).status_code == 403, host
    assert c.get("/search", headers={"host": "localhost:8765"}).status_code == 200


def test_every_answer_carries_the_policy(app):
    r = client(app).get("/search?q=docker")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "same-origin"
    assert client(app, token=False).get("/").headers["content-security-policy"] == csp


def test_search_finds_the_session_and_marks_the_words(app):
    r = client(app).get("/search?q=port+5432&mode=fulltext")
    assert r.status_code == 200
    assert 'href="/session/s-docker?at=0#seq-0"' in r.text
    assert "<mark>5432</mark>" in r.text
    assert '<span class="source">journal</span>' in r.text
    assert re.search(r"search;dur=\d+(\.\d+)?", r.headers["server-timing"])


def test_the_fragment_is_only_the_results(app):
    r = client(app).get("/search?q=useEffect&mode=fulltext&fragment=1")
    assert r.status_code == 200
    assert "<html" not in r.text and '<ol id="hits">' in r.text
    assert "s-react" in r.text


def test_search_filters_reach_the_store(app):
    c = client(app)
    everywhere = c.get("/search?q=migration&mode=fulltext&fragment=1").text
    assert "s-migrate" in everywhere
    beta = c.get("/search?q=migration&mode=fulltext&fragment=1&project=/work/beta").text
    assert "s-migrate" not in beta and "nothing found" in beta
    roles = re.findall(r"· (\w+)/text #", c.get("/search?q=schema&mode=fulltext&fragment=1&role=assistant").text)
    assert roles and set(roles) == {"assistant"}


def test_a_bad_search_says_why_in_one_line(app):
    r = client(app).get("/search?q=migration&since=yesterday-ish&fragment=1")
    assert r.status_code == 200
    assert 'class="error"' in r.text and "since" in r.text


def test_a_semantic_search_without_a_provider_says_so(app):
    r = client(app).get("/search?q=migration&mode=semantic&fragment=1")
    assert r.status_code == 200
    assert 'class="note"' in r.text or 'class="error"' in r.text


def test_a_session_page_carries_each_message_anchor_and_the_target(app):
    r = client(app).get("/session/s-migrate?at=2")
    assert r.status_code == 200
    ids = re.findall(r'id="seq-(\d+)"', r.text)
    assert ids == ["0", "1", "2", "3"]
    assert re.search(r'class="[^"]*\btarget\b[^"]*" id="seq-2"|id="seq-2"[^>]*class="[^"]*\btarget', r.text)
    assert "/work/alpha" in r.text and "claude --resume s-migrate" in r.text


def test_a_long_session_is_paged_and_the_rest_loads_after(app, monkeypatch):
    from claude_chats.ui import app as app_module

    monkeypatch.setattr(app_module, "PAGE", 10)
    c = client(app)
    first = c.get("/session/s-long").text
    assert re.findall(r'id="seq-(\d+)"', first) == [str(i) for i in range(10)]
    assert 'href="/session/s-long/more?after=9"' in first
    rest = c.get("/session/s-long/more?after=9").text
    assert re.findall(r'id="seq-(\d+)"', rest) == [str(i) for i in range(10, 20)]
    at = c.get("/session/s-long?at=25").text
    assert "seq-25" in at and "earlier messages" in at


def test_an_unknown_session_is_a_404_page(app):
    r = client(app).get("/session/no-such-session")
    assert r.status_code == 404 and "no session" in r.text


def test_the_sessions_page_lists_newest_first_with_resume_lines(app):
    r = client(app).get("/sessions")
    assert r.status_code == 200
    order = re.findall(r'class="session-link" href="/session/([^"?]+)"', r.text)
    assert order[0] == "s-long" and "s-migrate" in order
    assert "<svg" in r.text and "messages per day" in r.text
    assert f'name="csrf" value="{guard.csrf_value(TOKEN)}"' in r.text
    beta = client(app).get("/sessions?project=/work/beta").text
    assert set(re.findall(r'class="session-link" href="/session/([^"?]+)"', beta)) == {"s-react", "s-rust"}


def test_restore_refuses_a_post_without_the_csrf_value(app, tmp_path):
    c = client(app)
    assert c.post("/session/s-docker/restore", data={}).status_code == 403
    assert c.post("/session/s-docker/restore", data={"csrf": "guess"}).status_code == 403
    forged = c.post("/session/s-docker/restore", data={"csrf": guard.csrf_value(TOKEN)},
                    headers={"origin": "http://evil.example"})
    assert forged.status_code == 403
    projects = tmp_path / "claude" / "projects"
    assert not any(projects.rglob("s-docker.jsonl"))


def test_restore_with_the_csrf_value_writes_the_transcript_once(app, tmp_path):
    c = client(app)
    csrf = guard.csrf_value(TOKEN)
    r = c.post("/session/s-docker/restore", data={"csrf": csrf}, headers={"origin": f"http://{HOST}"})
    assert r.status_code == 200, r.text
    assert "written" in r.text and "claude --resume s-docker" in r.text
    written = list((tmp_path / "claude" / "projects").rglob("s-docker.jsonl"))
    assert len(written) == 1
    row, = [r for r in c.get("/sessions").text.split('<tr class="session-row"') if '/session/s-docker"' in r]
    assert "in Claude Code" in row and "Restore" not in row   # Claude Code has it again: no restore offered
    written[0].write_text(written[0].read_text() + '{"type":"user","note":"changed since"}\n')
    again = c.post("/session/s-docker/restore", data={"csrf": csrf})
    assert again.status_code == 409 and "force" in again.text
    assert "changed since" in written[0].read_text()


def test_status_page_shows_the_sections(app):
    r = client(app).get("/status")
    assert r.status_code == 200
    for section in ("journal", "hook", "sync", "postgres"):
        assert f"<th>{section}</th>" in r.text
    assert "sessions" in r.text


def test_export_is_whole_and_has_no_script(app):
    c = client(app)
    md = c.get("/session/s-long/export.md")
    assert md.status_code == 200 and "attachment" in md.headers["content-disposition"]
    assert "note 29 about the schema migration" in md.text
    html = c.get("/session/s-long/export.html")
    assert html.status_code == 200 and "note 0 about" in html.text
    assert "<script" not in html.text.lower()


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_stored_markup_is_escaped_everywhere(tmp_path):
    from tests.support.journals import store_session

    hostile = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2"> [x](javascript:alert(1))'
    store_session("s-evil", [hostile, "answer <b>bold</b>"], name='<img src=x onerror=alert(1)>',
                  project="/work/<script>p</script>")
    from claude_chats import paths
    from claude_chats.localstore.journal import Journal

    journal = Journal.open(paths.journal_path())
    searcher = Searcher(LocalSearch.open(journal.path), None, None)
    c = client(create_app(searcher, TOKEN, [HOST], journal_path=journal.path, watch=False))
    try:
        pages = [c.get("/search?q=pwned&mode=fulltext").text, c.get("/session/s-evil").text,
                 c.get("/sessions?origin=any").text, c.get("/session/s-evil/export.html").text]
    finally:
        searcher.close()
        journal.close()
    for page in pages:
        parser = _Tags()
        parser.feed(page)
        scripts = [a.get("src") for t, a in parser.tags if t == "script"]
        assert all(src == "/static/app.js" for src in scripts), scripts
        assert not any(k.startswith("on") for _, a in parser.tags for k in a)
        assert not any((a.get("href") or "").lower().startswith("javascript") for _, a in parser.tags)
        assert not [a for t, a in parser.tags if t == "img"]
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in pages[1]
