"""The sessions page and a long conversation in a real browser: a session whose transcript Claude Code
no longer has offers the restore form, and the form (its CSRF value and all) writes the transcript
back; a conversation longer than a page loads the rest as the person scrolls, in order, once each."""

import json

import pytest

from tests.support import lines
from tests.support.ui_corpus import TOKENIZER, chats_import, session_id

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")
expect = sync_api.expect

LONG = "5e55104e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"
LONG_MESSAGES = 450   # more than two pages of 200


def row(page, sid):
    return page.locator("tr.session-row", has=page.locator(f'a.session-link[href="/session/{sid}"]'))


def test_restore_writes_back_the_transcript_claude_code_lost(ui, ui_journal, page):
    path = ui_journal.path(TOKENIZER)
    sid = session_id(path)
    kept = {json.loads(raw).get("uuid") for raw in path.read_text().splitlines()} - {None}
    ui.login(page)
    page.goto(ui.path("/sessions"))
    expect(row(page, sid).locator("details.restore")).to_have_count(0)   # Claude Code still has it
    path.unlink()
    page.reload()
    restore = row(page, sid).locator("details.restore")
    restore.locator("summary").click()
    with page.expect_navigation():
        restore.locator('button[type="submit"]').click()
    expect(page.locator("#restored li").first).to_be_visible()
    assert not page.locator("#restore-error").count()
    assert path.is_file()
    back = {json.loads(raw).get("uuid") for raw in path.read_text().splitlines()} - {None}
    assert back and back <= kept   # its own lines, as Claude Code wrote them (bookkeeping may be left out)
    assert sid in page.locator("#resume-line").inner_text()
    page.goto(ui.path("/sessions"))
    expect(row(page, sid).locator("details.restore")).to_have_count(0)


def test_a_long_conversation_loads_as_you_scroll(ui, ui_journal, page):
    folder = ui_journal.projects / "-work-long"
    folder.mkdir()
    (folder / f"{LONG}.jsonl").write_bytes(lines.encode(*lines.conversation(LONG_MESSAGES, session=LONG)))
    assert chats_import()["messages"] == LONG_MESSAGES   # the real import, again: only the new file is new
    ui.login(page)
    page.goto(ui.path(f"/session/{LONG}"))
    articles = page.locator("article.msg[id^=seq-]")
    shown = articles.count()
    assert 0 < shown < LONG_MESSAGES
    for _ in range(20):
        if page.locator(f"#seq-{LONG_MESSAGES - 1}").count():
            break
        page.mouse.wheel(0, 50_000)
        page.wait_for_timeout(300)
    expect(page.locator(f"#seq-{LONG_MESSAGES - 1}")).to_be_attached()
    ids = articles.evaluate_all("els => els.map(e => Number(e.id.slice(4)))")
    assert ids == list(range(LONG_MESSAGES)), "each message once, in order"
    assert page.watch.errors == []
