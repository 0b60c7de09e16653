"""A stored message as HTML: hostile text stays text, whatever the kind of message it is in.

Every check parses the output (``html.parser``, which decodes entities in attributes as a browser
does) and asks what a browser would find: no script element, no ``on*`` attribute, no ``src``
or ``style`` attribute, no link outside http(s), mailto, ``#`` and the app's ``/session/`` pages.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claude_chats import transcript
from claude_chats.ui import render
from tests.support.fuzzing import fuzz_settings
from tests.support.html_checks import HOSTILE, Page, problems, shaped, soup

MESSAGE_KINDS = list(transcript.KINDS) + ["no-such-kind"]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_inert_in_every_kind_of_message(text):
    for kind in MESSAGE_KINDS:
        html = render.message({"seq": 3, "role": "user", "kind": kind, "timestamp": "2026-01-01T00:00:00.000Z",
                               "text": text})
        assert problems(html) == [], (kind, str(html))
        page = Page(html)
        shown_kind = render.one_of(kind, render.KINDS)
        assert [a.get("class") for a in page.all("article")] == [f"msg role-user kind-{shown_kind}"]
        assert page.ends.count("article") == 1, (kind, str(html))


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_is_inert(text):
    assert problems(render.markdown(text)) == [], str(render.markdown(text))


def test_raw_html_is_shown_as_text():
    page = Page(render.markdown("before <script>alert(1)</script> <img src=x onerror=alert(1)> after"))
    assert "<script>alert(1)</script>" in page.shown
    assert "<img src=x onerror=alert(1)>" in page.shown


@pytest.mark.parametrize("text", [t for t in HOSTILE if t.startswith("[x]") and "https:" not in t])
def test_an_unsafe_link_keeps_its_text_and_loses_its_target(text):
    page = Page(render.markdown(text))
    assert page.all("a") == []
    assert "x" in page.shown


@pytest.mark.parametrize("target", ["https://example.com/a?b=1&c=2", "http://example.com", "mailto:me@example.com",
                                    "#seq-4"])
def test_a_safe_link_is_a_link(target):
    links = Page(render.markdown(f"see [there]({target})")).all("a")
    assert [a["href"] for a in links] == [target]
    assert "noopener" in links[0]["rel"]


def test_a_relative_path_is_not_a_link():
    assert Page(render.markdown("[x](/search?q=1) [y](../z)")).all("a") == []


def test_images_are_never_loaded():
    page = Page(render.markdown("![a chart](https://example.com/c.png) ![](data:image/png;base64,AAAA)"))
    assert page.all("img") == []
    assert [a["href"] for a in page.all("a")] == ["https://example.com/c.png"]
    assert "[image: a chart]" in page.shown and "![](data:image/png;base64,AAAA)" in page.shown
    assert "[image]" in Page(render.markdown("![](https://example.com/c.png)")).shown


def test_code_fences_keep_their_language_and_their_text():
    page = Page(render.markdown('```python\nprint("<b>hi</b>")\n```\n\n```c#"><x\nint a;\n```'))
    classes = [attrs.get("class") for attrs in page.all("code")]
    assert classes == ["language-python", "language-c#x"]
    assert 'print("<b>hi</b>")' in page.shown


def test_tables_and_strikethrough_render_without_style_attributes():
    html = render.markdown("| a | b |\n|--:|:-:|\n| 1 | 2 |\n\n~~gone~~")
    page = Page(html)
    assert [attrs.get("class") for attrs in page.all("th")] == ["align-right", "align-center"]
    assert page.all("s") == [{}]
    assert problems(html) == []


def test_a_huge_text_is_shown_escaped_not_parsed():
    text = "# title\n" + "<script>alert(1)</script> [x](javascript:alert(1)) *a* " * 5_000
    assert len(text) > render.MAX_MARKDOWN
    html = render.markdown(text)
    page = Page(html)
    assert [tag for tag, _ in page.tags] == ["pre"]
    assert page.shown == text
    assert problems(render.message({"seq": 1, "role": "assistant", "kind": "text", "text": text})) == []


@pytest.mark.parametrize("text", ["[" * 50_000, "*a " * 50_000, "> " * 10_000 + "x", "- " * 20_000 + "x",
                                  "`" * 30_000, "<" * 100_000, "![" * 30_000 + "](" * 30_000])
def test_pathological_markdown_renders(text):
    assert problems(render.markdown(text)) == []


def test_a_text_costly_to_parse_is_shown_escaped_not_parsed():
    text = "[" * 20_000 + "<script>alert(1)</script>"
    assert len(text) < render.MAX_MARKDOWN and render.work(text) > render.MAX_WORK
    page = Page(render.markdown(text))
    assert page.all("pre") == [{"class": "plain"}] and page.shown == text
    assert render.work("an ordinary reply with **some** `code` and [a link](https://example.com)\n" * 100) \
        < render.MAX_WORK


def test_a_tool_result_cannot_close_its_details():
    text = "</pre></details></article><script>alert(1)</script><details open>"
    html = render.message({"seq": 7, "role": "user", "kind": "tool_result", "text": text})
    page = Page(html)
    assert page.all("details") == [{"class": "tool-result"}]
    assert page.ends.count("details") == 1 and page.ends.count("pre") == 1
    assert text in page.shown
    assert problems(html) == []


def test_a_message_has_its_header_anchor_and_class():
    html = render.message({"seq": 12, "role": "assistant", "kind": "text", "timestamp": "2026-01-02T03:04:05.678Z",
                           "text": "**bold** reply"}, target=True)
    page = Page(html)
    assert page.all("article") == [{"class": "msg role-assistant kind-text target", "id": "seq-12"}]
    assert page.all("time") == [{"datetime": "2026-01-02T03:04:05.678000+00:00"}]
    assert "2026-01-02 03:04:05 UTC" in page.shown
    assert {"class": "seq", "href": "#seq-12"} in page.all("a")
    assert page.all("strong") == [{}]


def test_what_a_person_typed_keeps_its_line_breaks():
    typed = Page(render.message({"seq": 1, "role": "user", "kind": "text", "text": "first line\nsecond line"}))
    replied = Page(render.message({"seq": 2, "role": "assistant", "kind": "text", "text": "first line\nsecond"}))
    assert typed.all("br") == [{}] and replied.all("br") == []


def test_values_outside_the_fixed_sets_become_other():
    html = render.message({"seq": '1" onclick="alert(1)', "role": "<b>", "kind": 'x" onclick="y',
                           "timestamp": '"><script>', "text": "t"})
    page = Page(html)
    assert page.all("article") == [{"class": "msg role-other kind-other"}]
    assert page.all("time") == []
    assert problems(html) == []
    assert Page(render.message({"seq": True, "role": "user", "kind": "text", "text": "t"})).all("article")[0].get(
        "id") is None


@pytest.mark.parametrize("kind, label", [("tool_use", "Bash"), ("tool_result", "result"), ("thinking", "thinking"),
                                         ("meta", "note from Claude Code")])
def test_tool_calls_results_and_thinking_are_collapsed_with_their_size(kind, label):
    text = "[Bash] git status\n<b>second</b> line" if kind == "tool_use" else "line one\n<b>two</b>\nthree"
    page = Page(render.message({"seq": 2, "role": "assistant", "kind": kind, "text": text}))
    assert len(page.all("details")) == 1 and "open" not in page.all("details")[0]
    lines = text.count("\n") + 1
    assert f"{label}" in page.shown and f"{lines} lines, {len(text)} characters" in page.shown
    assert text in page.shown


@pytest.mark.parametrize("text, shown", [("[Bash] git status", "git status"), ("[Read] <b>/etc/x</b>", "<b>/etc/x</b>")])
def test_a_one_line_tool_call_is_shown_once_not_folded(text, shown):
    html = render.message({"seq": 3, "role": "assistant", "kind": "tool_use", "text": text})
    page = Page(html)
    assert page.all("details") == [] and page.all("p") == [{"class": "tool-call"}]
    assert page.shown.count(shown) == 1 and text.split("]")[0][1:] in page.shown
    assert problems(html) == []


@pytest.mark.parametrize("text", ["[Bash] " + "x" * 101, "[Bash] ls\n-la", "[Bash] ls… [900 more characters]"])
def test_a_tool_call_longer_than_its_preview_stays_folded(text):
    page = Page(render.message({"seq": 3, "role": "assistant", "kind": "tool_use", "text": text}))
    assert len(page.all("details")) == 1


def test_a_cut_message_says_its_whole_size():
    text = "x" * 100 + "… [900 more characters]"
    assert "1 line, 1,000 characters (cut)" in Page(render.message({"seq": 1, "role": "user", "kind": "tool_result",
                                                                    "text": text})).shown


def test_an_error_result_says_so():
    page = Page(render.message({"seq": 1, "role": "user", "kind": "tool_result", "text": "[error] exit 1"}))
    assert page.all("details") == [{"class": "tool-result error"}]


def test_compaction_is_marked_with_what_was_compacted():
    boundary = Page(render.message({"seq": 5, "role": "system", "kind": "compact_boundary",
                                    "text": "Conversation compacted (trigger auto, preTokens 150000)"}))
    assert "compacted here" in boundary.shown and "preTokens 150000" in boundary.shown
    summary = Page(render.message({"seq": 6, "role": "user", "kind": "compact_summary",
                                   "text": "This session is being continued...\n\n## Work done\n- fixed *the* bug"}))
    assert summary.all("article") == [{"class": "msg role-user kind-compact_summary", "id": "seq-6"}]
    assert "Compacted: the summary" in summary.shown
    assert summary.all("h2") == [{}] and summary.all("em") == [{}]


def test_a_call_links_to_the_subagent_it_started():
    html = render.message({"seq": 9, "role": "assistant", "kind": "tool_use", "text": "[Agent] look x go"},
                          link="0ab-cd:agent-a4ca7529859c158c2")
    assert Page(html).all("a")[-1] == {"class": "subagent-link", "href": "/session/0ab-cd:agent-a4ca7529859c158c2"}


@pytest.mark.parametrize("bad", ['x" onclick="alert(1)', "../../etc", "a/b", "", None, "x:agent-", "-x"])
def test_no_link_to_an_id_that_is_not_one(bad):
    html = render.message({"seq": 9, "role": "assistant", "kind": "tool_use", "text": "[Agent] x"}, link=bad)
    assert [a for a in Page(html).all("a") if a.get("class") == "subagent-link"] == []
    assert render.session_href(bad) is None


def test_session_href_quotes_and_anchors():
    assert render.session_href("abc:agent-a1", 7) == "/session/abc:agent-a1?at=7#seq-7"
    assert render.session_href("abc", "7") == "/session/abc"


# -- fuzzing: pieces of markup, HTML and schemes in any order ------------------------------------

@given(st.lists(st.one_of(soup, shaped), min_size=1, max_size=4).map("\n".join), st.sampled_from(MESSAGE_KINDS))
@fuzz_settings(300, 5_000)
def test_no_mix_of_markup_renders_anything_active(text, kind):
    assert problems(render.markdown(text)) == []
    assert problems(render.message({"seq": 1, "role": "assistant", "kind": kind, "text": text})) == []


def test_a_slash_command_reads_as_typed_and_its_wrapper_is_folded():
    stored = ("<command-message>doctor is running…</command-message>\n<command-name>/doctor</command-name>\n"
              "<command-args>--fix <img src=x onerror=alert(1)></command-args>")
    html = str(render.message({"seq": 3, "role": "user", "kind": transcript.COMMAND, "text": stored}))
    assert '<code>/doctor --fix &lt;img src=x onerror=alert(1)&gt;</code>' in html
    assert "<details" in html and "&lt;command-name&gt;" in html
    assert problems(html) == []
    plain = str(render.message({"seq": 4, "role": "user", "kind": transcript.COMMAND, "text": "/clear"}))
    assert "/clear" in plain and "<code>" not in plain.split("</header>", 1)[1].split("<pre")[0]
