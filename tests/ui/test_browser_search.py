"""Search in a real browser, as a person searches: type (no Enter) and the right session is among the
hits, its words marked, with the notes and the store the CLI's own search reports; ``/`` focuses the
box, arrows and j/k move between hits, Enter opens one; a search is a link."""

import json
import subprocess
import urllib.parse

import pytest

from tests.support.browser import screenshot
from tests.support.hooks import CHATS
from tests.support.ui_corpus import TIMELINE, WORKTREES, field, session_id

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[dev]'")
expect = sync_api.expect

QUERY = "timeline filtering"   # what the person remembers of one of the real sessions


def cli_search(query, *options):
    """What ``chats search --local --json`` answers for ``query``: the page must show the same."""
    out = subprocess.run(CHATS + ["search", query, "--local", "--json", *options], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def hit_links(page, session=None):
    selector = "#hits li.hit a.hit-link"
    return page.locator(f'{selector}[href^="/session/{session}?"]' if session else selector)


def typed(page, query):
    """Type ``query`` into the box key by key, as a person does, and wait for the hits it brings."""
    page.locator("#q").click()
    page.locator("#q").press_sequentially(query, delay=40)
    expect(hit_links(page).first).to_be_visible()


def test_typing_finds_the_session_with_its_words_marked(ui, ui_journal, page):
    ui.login(page)
    assert urllib.parse.urlsplit(page.url).path == "/search"
    fragments = []
    page.on("response", lambda r: fragments.append(r) if "fragment=1" in r.url else None)
    target = session_id(ui_journal.path(TIMELINE))
    typed(page, QUERY)
    expect(hit_links(page, target).first).to_be_visible()
    assert fragments, "the hits came without the fragment fetch: not as you type"
    assert all(r.headers.get("server-timing", "").startswith("search;dur=") for r in fragments if r.ok)
    assert page.evaluate("document.activeElement.id") == "q" and page.input_value("#q") == QUERY

    href = hit_links(page, target).first.get_attribute("href")
    at = urllib.parse.parse_qs(urllib.parse.urlsplit(href).query)["at"][0]
    assert href.endswith(f"#seq-{at}"), href
    marked = {m.lower() for m in page.locator("#hits li.hit mark").all_inner_texts()}
    assert marked and all(any(word in m for word in QUERY.split()) for m in marked), marked
    assert set(page.locator(".source").all_inner_texts()) == {"journal"}   # --local: the journal answered

    cli = cli_search(QUERY)
    assert target in {h["session_id"] for h in cli["hits"]}
    assert page.locator("#notes li.note").all_inner_texts() == cli["notes"]

    page.select_option('select[name="mode"]', "fulltext")   # the mode changes: the hits follow, no Enter
    expect(page.locator("#notes li.note")).to_have_count(len(cli_search(QUERY, "--mode", "fulltext")["notes"]))
    expect(hit_links(page, target).first).to_be_visible()
    screenshot(page, "search")


def selected(page):
    """The index of the hit the keys selected (focus, or a marker class or aria state on it)."""
    return page.evaluate("""() => {
      const hits = [...document.querySelectorAll('#hits li.hit')];
      return hits.findIndex(h => h.contains(document.activeElement) || h.matches(
        '.selected, .active, .current, [aria-selected=true], [aria-current]:not([aria-current=false])'));
    }""")


def test_keys_focus_move_and_open(ui, ui_journal, page):
    ui.login(page)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    assert page.input_value("#q") == ""   # the slash focused the box; it was not typed into it
    page.keyboard.type(QUERY, delay=40)
    # the answer to the whole query (an answer to its first letters may be shown before it)
    expect(page.locator("#results")).to_have_attribute("data-answered", QUERY)
    expect(hit_links(page).nth(2)).to_be_visible()   # three hits at least, to move between
    first = selected(page)                           # none yet, or the first one (Enter would open it)
    assert first in (-1, 0)
    page.keyboard.press("ArrowDown")
    assert selected(page) == first + 1
    page.keyboard.press("j")
    assert selected(page) == first + 2
    page.keyboard.press("k")
    assert selected(page) == first + 1
    page.keyboard.press("j")
    href = hit_links(page).nth(first + 2).get_attribute("href")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == ui.path(href), (page.url, href)


def test_a_search_is_a_link(ui, ui_journal, page):
    ui.login(page)
    page.goto(ui.path("/search?" + urllib.parse.urlencode({"q": QUERY, "mode": "fulltext"})))
    target = session_id(ui_journal.path(TIMELINE))
    expect(hit_links(page, target).first).to_be_visible()
    assert page.input_value("#q") == QUERY
    assert page.watch.errors == []
    first = selected(page)
    page.keyboard.press("ArrowDown")   # the keys work on a page opened from a link too
    assert selected(page) == first + 1
    other = field(ui_journal.path(WORKTREES), "cwd")
    page.goto(ui.path("/search?" + urllib.parse.urlencode({"q": QUERY, "mode": "fulltext", "project": other})))
    expect(page.locator("#hits")).to_be_attached()
    assert hit_links(page, target).count() == 0   # the filter is in the link too
