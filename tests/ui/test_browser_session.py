"""A conversation in a real browser: a search hit opens it at its message, highlighted and in view; a
tool result is collapsed with its size and opens on a click; an Agent call links to the subagent's
conversation, and that one links back."""

import json
import re
import urllib.parse

import pytest

from tests.support.browser import screenshot
from tests.support.ui_corpus import TIMELINE, WORKTREES, session_id, subagent_files

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")
expect = sync_api.expect

QUERY = "timeline filtering"


def test_a_hit_opens_at_its_message_highlighted(ui, ui_journal, page):
    ui.login(page)
    target = session_id(ui_journal.path(TIMELINE))
    page.goto(ui.path("/search?" + urllib.parse.urlencode({"q": QUERY, "kind": "text"})))   # said, not tool output
    link = page.locator(f'#hits a.hit-link[href^="/session/{target}?"]').first
    href = link.get_attribute("href")
    seq = urllib.parse.parse_qs(urllib.parse.urlsplit(href).query)["at"][0]
    with page.expect_navigation():
        link.click()
    assert urllib.parse.urlsplit(page.url).path == f"/session/{target}"
    assert page.url.endswith(f"#seq-{seq}")
    message = page.locator(f"article#seq-{seq}")
    expect(message).to_have_class(re.compile(r"(^|\s)target(\s|$)"))
    expect(message).to_be_in_viewport()
    assert page.locator("article.msg.target").count() == 1
    text = message.text_content().lower()   # a tool result's text may be collapsed: it is there all the same
    assert any(word in text for word in QUERY.split()), text[:300]
    call = page.locator(f"article.msg.kind-tool_use:has(~ article#seq-{seq}) details").last   # what it did last
    call.locator("summary").click()
    assert call.get_attribute("open") is not None
    call.evaluate("e => window.scrollTo(0, e.closest('article').getBoundingClientRect().top + window.scrollY - 60)")
    expect(message).to_be_in_viewport()   # the call opened, and the message still in view below it
    screenshot(page, "conversation")


def test_a_tool_result_opens_on_a_click(ui, ui_journal, page):
    ui.login(page)
    page.goto(ui.path(f"/session/{session_id(ui_journal.path(TIMELINE))}"))
    details = page.locator("article.msg.kind-tool_result details").first
    expect(details).to_be_attached()
    assert details.get_attribute("open") is None
    body = details.locator(":scope > :not(summary)").first
    expect(body).to_be_hidden()
    summary = details.locator("summary")
    assert any(ch.isdigit() for ch in summary.inner_text()), summary.inner_text()   # its size
    summary.click()
    assert details.get_attribute("open") is not None
    expect(body).to_be_visible()
    assert body.inner_text().strip()


def agent_ids(path):
    """The subagents the Agent calls of the session at ``path`` started (their results name them)."""
    ids = []
    for raw in path.read_text().splitlines():
        result = json.loads(raw).get("toolUseResult")
        if isinstance(result, dict) and result.get("agentId"):
            ids.append(result["agentId"])
    return ids


def first_prompt(path):
    """The text of the first line of a transcript (the prompt a subagent was given)."""
    content = json.loads(path.read_text().splitlines()[0])["message"]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def test_an_agent_call_links_to_its_subagent_and_back(ui, ui_journal, page):
    ui.login(page)
    path = ui_journal.path(WORKTREES)
    parent = session_id(path)
    files = {f.stem.removeprefix("agent-"): f for f in subagent_files(path)}
    started = agent_ids(path)
    assert started and set(started) <= set(files)
    page.goto(ui.path(f"/session/{parent}"))
    links = page.locator(f'article.msg a[href^="/session/{parent}:agent-"]')
    expect(links.first).to_be_attached()
    hrefs = {urllib.parse.urlsplit(h).path for h in links.evaluate_all("els => els.map(e => e.getAttribute('href'))")}
    assert hrefs == {f"/session/{parent}:agent-{a}" for a in started}

    agent = started[0]
    link = page.locator(f'article.msg a[href^="/session/{parent}:agent-{agent}"]').first
    link.scroll_into_view_if_needed()
    with page.expect_navigation():
        link.click()
    assert urllib.parse.urlsplit(page.url).path == f"/session/{parent}:agent-{agent}"
    first = page.locator("article.msg").first
    for word in re.findall(r"[A-Za-z]{4,}", first_prompt(files[agent]))[:6]:   # markdown renders, words stay
        expect(first).to_contain_text(word)

    back = page.locator(f'a[href^="/session/{parent}"]:not([href^="/session/{parent}:"])').first
    with page.expect_navigation():
        back.click()
    assert urllib.parse.urlsplit(page.url).path == f"/session/{parent}"
    expect(page.locator(f'article.msg a[href^="/session/{parent}:agent-{agent}"]').first).to_be_attached()
