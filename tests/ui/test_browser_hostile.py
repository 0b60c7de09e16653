"""Stored text is hostile: the session ui_corpus writes (``<script>``, ``<img onerror>``, ``javascript:``
and ``data:`` links, a whole HTML page as a tool result, HTML in the name, project and branch, a Task
call whose subagent is hostile too) runs nothing wherever the page shows it, and is shown as the
text it is. Each payload would set ``window.pwned``, the title, or call the test's listener; the
CSP must have had nothing to refuse (text is escaped, not merely blocked)."""

import urllib.parse

import pytest

from tests.support.browser import assert_nothing_ran, visible_text
from tests.support.ui_corpus import (HOSTILE_AGENT, HOSTILE_BRANCH, HOSTILE_NAME, HOSTILE_PROJECT, HOSTILE_SESSION,
                                     HOSTILE_WORD)

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")
expect = sync_api.expect

SHOWN = ("<script>window.pwned='script'", "onerror=", "javascript:window.pwned='link'", "<iframe src=")


def open_every_details(page):
    """What a curious person does: open every collapsed tool call, result and thought."""
    for summary in page.locator("details > summary").all():
        summary.scroll_into_view_if_needed()
        summary.click()


def test_the_hostile_session_runs_nothing_and_reads_as_text(ui, page, sink):
    ui.login(page)
    response = page.goto(ui.path(f"/session/{HOSTILE_SESSION}"))
    assert response.ok
    open_every_details(page)
    assert_nothing_ran(page, sink)
    text = visible_text(page)
    for shown in SHOWN:
        assert shown in text, shown
    assert HOSTILE_NAME in text and HOSTILE_BRANCH in text and HOSTILE_PROJECT in text
    assert page.locator("pre code", has_text="<script>window.pwned='code'</script>").count() == 1   # a code block


def test_its_subagent_runs_nothing(ui, page, sink):
    ui.login(page)
    assert page.goto(ui.path(f"/session/{HOSTILE_SESSION}:agent-{HOSTILE_AGENT}")).ok   # the link: test_browser_session
    open_every_details(page)
    assert_nothing_ran(page, sink)
    assert "<script>window.pwned='subprompt'</script>" in visible_text(page)
    assert "javascript:window.pwned='sublink'" in visible_text(page)


def test_its_hits_run_nothing(ui, page, sink):
    ui.login(page)
    page.locator("#q").press_sequentially(HOSTILE_WORD, delay=40)
    hits = page.locator(f'#hits a.hit-link[href^="/session/{HOSTILE_SESSION}"]')
    expect(hits.first).to_be_visible()
    expect(page.locator("#hits mark", has_text=HOSTILE_WORD).first).to_be_visible()
    assert_nothing_ran(page, sink)
    assert HOSTILE_NAME in visible_text(page)
    query = f"<script>window.pwned='q'</script><img src=x onerror=\"window.pwned='q2'\"> {HOSTILE_WORD}"
    page.goto(ui.path("/search?" + urllib.parse.urlencode({"q": query, "project": HOSTILE_PROJECT})))
    assert page.input_value("#q") == query   # reflected as the box's value, nothing else
    assert_nothing_ran(page, sink)


def test_the_sessions_page_runs_nothing(ui, page, sink):
    ui.login(page)
    page.goto(ui.path("/sessions"))
    expect(page.get_by_text(HOSTILE_NAME, exact=False).first).to_be_visible()
    assert_nothing_ran(page, sink)


def test_its_export_runs_nothing_even_opened_from_disk(ui, page, sink, tmp_path):
    ui.login(page)
    response = page.request.get(ui.path(f"/session/{HOSTILE_SESSION}/export.html"))
    assert response.ok
    exported = tmp_path / "export.html"
    exported.write_bytes(response.body())
    page.goto(exported.as_uri())   # a file on disk: no CSP, no server; only its escaping protects it
    open_every_details(page)
    assert_nothing_ran(page, sink, exported=True)
    text = visible_text(page)
    for shown in SHOWN:
        assert shown in text, shown
    markdown = page.request.get(ui.path(f"/session/{HOSTILE_SESSION}/export.md"))
    assert markdown.ok and "<script>window.pwned='script'" in markdown.text()
