"""A conversation open in the page grows when the hook records a new turn: Claude Code appends two lines
to the transcript, the real hook process runs for its Stop event, and the turn appears without a reload."""

import re

import pytest

from tests.support.hooks import hook_event
from tests.support.ui_corpus import TOKENIZER, next_turn, session_id

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")
expect = sync_api.expect


def last_seq(page):
    ids = page.locator("article.msg[id^=seq-]").evaluate_all("els => els.map(e => e.id)")
    return max(int(i.removeprefix("seq-")) for i in ids)


def test_a_new_turn_appears_after_a_hook_run(ui, ui_journal, page):
    ui.login(page)
    path = ui_journal.path(TOKENIZER)
    sid = session_id(path)
    page.goto(ui.path(f"/session/{sid}"))
    before = last_seq(page)
    page.evaluate("window.__same_document = true")
    prompt, reply = "does the quince turn reach the open page", "Yes: the quince turn is live."
    with open(path, "ab") as fh:
        fh.write(next_turn(path, prompt, reply))
    hook_event(path, "Stop", session=sid)
    answer = page.locator("article.msg", has_text=reply)
    expect(answer).to_be_visible(timeout=10_000)
    expect(page.locator("article.msg", has_text=prompt)).to_be_attached()
    assert page.evaluate("window.__same_document") is True   # it grew; the page was not reloaded
    seq = int(re.fullmatch(r"seq-(\d+)", answer.get_attribute("id")).group(1))
    assert seq > before and last_seq(page) == seq
    assert page.locator("article.msg", has_text=reply).count() == 1   # once, not once per event
