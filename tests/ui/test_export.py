"""A session exported as one HTML file or as Markdown: inert, self-contained, redacted.

The HTML is parsed as a browser would (``html.parser``); the Markdown as a lax renderer would
(markdown-it with raw HTML on and every link target taken), so what it finds there is what
such a renderer would obey.
"""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.searcher import Searcher
from claude_chats.ui import export, render
from tests.support import lines
from tests.support.stand_ins import write
from tests.support.fuzzing import fuzz_settings
from tests.support.html_checks import HOSTILE, Page, problems, shaped, soup

SESSION = {"session_id": "sess-1", "name": "fix the <b>flaky</b> test [x](javascript:alert(1))",
           "project_path": "/work/alpha", "git_branch": "main", "started_at": "2026-01-01T10:00:00.000Z",
           "last_at": "2026-01-01T11:00:00.000Z", "message_count": 4, "machine": "laptop",
           "parent_session_id": None, "is_subagent": False, "entrypoint": "cli", "machine_made": False}


def msg(seq, kind, text, role="assistant"):
    return {"seq": seq, "role": role, "kind": kind, "timestamp": f"2026-01-01T10:00:{seq:02d}.000Z", "text": text}


def hostile_messages():
    kinds = ["text", "tool_use", "tool_result", "thinking", "compact_summary", "compact_boundary", "command", "meta"]
    return [msg(i, kinds[i % len(kinds)], text) for i, text in enumerate(HOSTILE)]


# -- HTML -----------------------------------------------------------------------------------------

def test_the_html_file_runs_and_loads_nothing():
    out = export.html(SESSION, hostile_messages())
    page = Page(out)
    metas = page.all("meta")
    assert {"http-equiv": "Content-Security-Policy", "content": export.CSP} in metas
    assert "script-src" not in export.CSP and "default-src 'none'" in export.CSP
    assert [tag for tag, _ in page.tags if tag in ("script", "link", "img", "iframe", "object", "embed")] == []
    body = out.split("</head>", 1)[1]
    assert problems(body) == []
    assert len(page.all("article")) == len(HOSTILE)


def test_the_html_file_says_what_session_it_is():
    page = Page(export.html(SESSION, [msg(0, "text", "hello", "user")]))
    shown = page.shown
    for value in ("/work/alpha", "main", "2026-01-01T10:00:00.000Z", "2026-01-01T11:00:00.000Z", "a person's session",
                  "laptop", "sess-1"):
        assert value in shown
    assert SESSION["name"] in shown     # as text: its tag and its link are not markup
    assert page.all("title") == [{}] and page.all("b") == []
    assert [attrs.get("href") for attrs in page.all("a")] == ["#seq-0"]


def test_a_subagent_or_machine_made_session_says_so():
    sub = {**SESSION, "session_id": "sess-1:agent-a1", "parent_session_id": "sess-1", "is_subagent": True,
           "machine_made": True, "entrypoint": "sdk-cli"}
    shown = Page(export.html(sub, [])).shown
    assert "subagent, machine-made (sdk-cli)" in shown and "Subagent of" in shown


# -- Markdown -------------------------------------------------------------------------------------

LAX = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
LAX.validateLink = lambda url: True


def obeyed(markdown):
    """What a lax renderer would act on in ``markdown``: raw HTML, images, links outside the safe schemes."""
    found = []
    for token in export._walk(LAX.parse(markdown)):
        if token.type in ("html_block", "html_inline", "image"):
            found.append((token.type, token.content))
        if token.type == "link_open" and not render.safe_href(token.attrGet("href")):
            found.append(("link", token.attrGet("href")))
    return found


def fences(markdown):
    return [t.content for t in LAX.parse(markdown) if t.type == "fence"]


def test_the_markdown_file_holds_nothing_a_renderer_would_obey():
    out = export.markdown(SESSION, hostile_messages())
    assert obeyed(out) == []
    for text in HOSTILE:      # each still there, as its source
        assert any(text in block for block in fences(out)), text


def test_the_check_would_see_hostile_markdown():
    assert obeyed("<script>alert(1)</script>") and obeyed("[x](javascript:alert(1))") and obeyed("![a](https://e/p)")


def test_prose_stays_markdown():
    text = ("## Plan\n\n1. **fix** the `parse()` call\n2. see [the docs](https://example.com/docs)\n\n"
            "| a | b |\n|---|---|")
    out = export.markdown(SESSION, [msg(0, "text", text)])
    assert text in out and fences(out) == []


@pytest.mark.parametrize("text, kept", [("```python\nprint(1)", False), ("~~~\nopen", False),
                                        ("- item\n\n  ```\n  code", True), ("> quote\n> ```", True)])
def test_prose_that_leaves_a_fence_open_is_fenced(text, kept):
    """A fence left open at the top would swallow the messages after it; one in a list or a quote
    ends with it."""
    out = export.markdown(SESSION, [msg(0, "text", text), msg(1, "text", "the next message")])
    assert (text + "\n\n## 1 ·" in out) is kept
    assert LAX.render(out).endswith("<p>the next message</p>\n")


@pytest.mark.parametrize("kind", ["tool_use", "tool_result", "thinking", "command", "meta", "compact_boundary"])
def test_text_that_would_close_its_fence_gets_a_longer_one(kind):
    text = "before\n```\n````\n<script>alert(1)</script>\n`````js\nafter"
    out = export.markdown(SESSION, [msg(0, kind, text)])
    assert fences(out) == [text + "\n"]
    assert obeyed(out) == []


def test_the_markdown_file_says_what_session_it_is():
    out = export.markdown(SESSION, [msg(3, "text", "hello", "user")])
    head = out.split("\n## ", 1)[0]
    assert obeyed(head) == []
    rendered = LAX.render(head)
    for value in ("/work/alpha", "main", "2026-01-01T10:00:00.000Z", "a person's session", "laptop", "sess-1"):
        assert value in rendered
    assert "<b>" not in rendered and "&lt;b&gt;flaky&lt;/b&gt;" in rendered
    assert "## 3 · user · text · 2026" in out


def test_a_compaction_is_marked_in_markdown():
    out = export.markdown(SESSION, [msg(0, "compact_boundary", "Conversation compacted (trigger auto)", "system"),
                                    msg(1, "compact_summary", "This session is being continued...", "user")])
    assert "compacted here" in out and "Compacted: the summary" in out


# -- redaction: the caller's, through the Searcher ------------------------------------------------

TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
PASSWORD = "Qw3rty!9zx&Plm2vB"


def secret_session(folder):
    rows = [lines.user(f"deploy with export GITHUB_TOKEN={TOKEN} please", session="sess-secret",
                       ts="2026-02-01T10:00:00.000Z"),
            lines.assistant([{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                              "input": {"command": f"curl -u admin:{PASSWORD} https://example.com/deploy"}}],
                            session="sess-secret", ts="2026-02-01T10:00:01.000Z"),
            lines.user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": f"token={TOKEN} accepted"}],
                       session="sess-secret", ts="2026-02-01T10:00:02.000Z"),
            {"type": "custom-title", "customTitle": f"deploy {TOKEN}", "sessionId": "sess-secret"}]
    return write(folder / "sess-secret.jsonl", rows)


@pytest.mark.parametrize("redacted", [True, False])
def test_an_export_through_a_redacting_searcher_holds_no_secret(tmp_path, redacted):
    journal = Journal.open(str(tmp_path / "journal.db"))
    assert not journal.import_files([str(secret_session(tmp_path / "projects"))]).errors
    session, messages = export.read(Searcher(LocalSearch(journal), redact_results=redacted), "sess-secret",
                                    per_page=2)
    assert [m["seq"] for m in messages] == [0, 1, 2]
    html = export.html(session, messages)
    for out in (html + Page(html).shown, export.markdown(session, messages)):   # as it reads
        leaked = [s for s in (TOKEN, PASSWORD, TOKEN[4:20]) if s in out]
        if redacted:
            assert leaked == [] and "[REDACTED:" in out
            assert "deploy [REDACTED:github-token]" in out.replace("\\", "")     # the name, in the header
        else:   # the control: without redaction the export does hold them, so the check above can fail
            assert TOKEN in out and PASSWORD in out
    journal.close()


def test_exports_are_strings_of_the_whole_session():
    messages = [msg(i, "text", f"message number {i}") for i in range(50)]
    out = export.html(SESSION, messages)
    assert all(f'id="seq-{i}"' in out for i in range(50))
    md = export.markdown(SESSION, messages)
    assert all(f"message number {i}" in md for i in range(50))
    assert json.dumps(md)    # plain text, no bytes


@given(st.lists(st.one_of(soup, shaped), min_size=1, max_size=4).map("\n".join),
       st.sampled_from(["text", "recap", "compact_summary", "tool_result", "thinking", "other"]))
@fuzz_settings(200, 3_000)
def test_no_mix_of_markup_exports_anything_a_renderer_obeys(text, kind):
    assert obeyed(export.markdown({**SESSION, "name": text}, [msg(1, kind, text)])) == []
    assert problems(export.html({**SESSION, "name": text}, [msg(1, kind, text)]).split("</head>", 1)[1]) == []
