"""The doors of ``chats ui`` in a real browser: no token, no page (403); the printed token becomes an
HttpOnly, SameSite=Strict cookie and leaves the address bar; a foreign Host (DNS rebinding: a name
that resolves to loopback) gets 403 even with the token; a POST without the page's CSRF value, or
from another origin, is refused; every response carries the CSP and the other headers."""

import http.client
import urllib.parse

import pytest

from tests.support.browser import REBIND_HOST
from tests.support.ui_corpus import TIMELINE, session_id

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")

CSP = {"default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:", "connect-src 'self'",
       "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"}


def test_no_token_no_page(ui, page):
    for path in ("/", "/search", "/search?q=timeline", "/sessions", "/status", "/static/app.js", "/events?session=x"):
        response = page.goto(ui.path(path))
        assert response.status == 403, (path, response.status)
        assert page.locator("#hits, article.msg, #q").count() == 0, path
    assert page.goto(ui.path("/?token=not-the-token")).status == 403
    assert page.context.cookies() == []


def test_the_token_becomes_a_strict_cookie(ui, page):
    ui.login(page)
    assert urllib.parse.urlsplit(page.url).path == "/search" and "token" not in page.url
    (cookie,) = [c for c in page.context.cookies() if c["name"] == "chats_ui_token"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert "chats_ui_token" not in page.evaluate("document.cookie")   # no script can read it
    assert page.goto(ui.path("/sessions")).status == 200           # the cookie opens the other pages


def test_a_foreign_host_is_refused_even_with_the_token(ui, page):
    response = page.goto(f"http://{REBIND_HOST}:{ui.port}/?token={ui.token}")
    assert response.status == 403
    assert page.context.cookies() == []                             # nothing was set for that name
    assert page.goto(f"http://localhost:{ui.port}/?token={ui.token}").ok   # localhost:PORT is let in


def csrf(page):
    return page.get_attribute('meta[name="csrf"]', "content")


def post(page, path, fields):
    """A same-origin POST from the page's own script context (the browser adds cookie and Origin)."""
    return page.evaluate("""async ([path, fields]) => {
      const r = await fetch(path, {method: 'POST', body: new URLSearchParams(fields), redirect: 'manual'});
      return r.status;
    }""", [path, fields])


def test_a_post_needs_the_pages_csrf_value(ui, ui_journal, page):
    ui.login(page)
    page.goto(ui.path("/sessions"))
    token = csrf(page)
    assert token and token != ui.token
    restore = f"/session/{session_id(ui_journal.path(TIMELINE))}/restore"
    assert post(page, restore, {}) == 403
    assert post(page, restore, {"csrf": "0" * len(token)}) == 403
    assert post(page, restore, {"csrf": ui.token}) == 403            # the token itself is not the CSRF value
    assert post(page, restore, {"csrf": token}) not in (403, 404, 405, 500)   # the right value is let in


def raw_post(ui, path, body, **headers):
    """A POST as another site's page would send it, down to the Origin header a page cannot forge."""
    conn = http.client.HTTPConnection("127.0.0.1", ui.port, timeout=10)
    try:
        conn.request("POST", path, body=urllib.parse.urlencode(body), headers={
            "Host": f"127.0.0.1:{ui.port}", "Content-Type": "application/x-www-form-urlencoded", **headers})
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_post_from_another_origin_is_refused(ui, ui_journal, page):
    ui.login(page)
    page.goto(ui.path("/sessions"))
    fields = {"csrf": csrf(page)}
    cookie = "chats_ui_token=" + next(c["value"] for c in page.context.cookies() if c["name"] == "chats_ui_token")
    restore = f"/session/{session_id(ui_journal.path(TIMELINE))}/restore"
    assert raw_post(ui, restore, fields, Cookie=cookie, Origin="http://evil.example") == 403
    assert raw_post(ui, restore, fields, Cookie=cookie, Origin=f"http://{REBIND_HOST}:{ui.port}") == 403
    assert raw_post(ui, restore, fields, Origin=f"http://127.0.0.1:{ui.port}") == 403   # no cookie
    assert raw_post(ui, restore, {}, Cookie=cookie, Origin="null") == 403   # an opaque origin, no CSRF value
    assert raw_post(ui, restore, fields, Cookie=cookie, Origin=f"http://127.0.0.1:{ui.port}") not in (403, 500)


def test_every_response_carries_the_headers(ui, ui_journal, page):
    ui.login(page)
    for path in ("/search?q=timeline", "/sessions", "/status", f"/session/{session_id(ui_journal.path(TIMELINE))}",
                 "/static/app.js", "/static/app.css"):
        response = page.goto(ui.path(path))
        assert response.ok, (path, response.status)
        headers = response.headers
        assert {d.strip() for d in headers["content-security-policy"].split(";") if d.strip()} == CSP, path
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "same-origin"
        assert "no-store" in headers["cache-control"]


def test_it_stops_cleanly_and_prints_one_line(ui):
    assert ui.stop() == 0, ui.stderr()[-2000:]
    assert len(ui.out.read_text().splitlines()) == 1
