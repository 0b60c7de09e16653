"""Memory that reaches Claude, inside the real Claude Code 2.1.332 (issue 13).

- The three memory tools are in the first request of a fresh session, with
  their schemas: no ToolSearch first (item 4), in print and interactive mode.
- After ``/compact`` and after ``--resume``, the next request Claude Code sends
  carries the hook's recovery context with the right session id and seq range
  (item 1); a ``get_conversation`` call the scripted model builds from that
  context returns a marker said before the compaction that the summary lacks.
- A new session's first request carries the hook's list of the project's latest sessions
  (item 2, ``startup_sessions``).
- ``session_id="current"`` is the session Claude Code is on, also after
  ``/clear`` and with ``--continue``, where ``CLAUDE_CODE_SESSION_ID`` is stale
  (item 5).

Every test of this folder also checks that `chats mcp` was never late (conftest).
"""

import json
import re
import time

import pytest

from .fake_api import COMPACT_SUMMARY, Block, Reply, latest_prompt
from .harness import tool_result_text

TOOLS = ("search_memory", "get_conversation", "list_recent_sessions")
FULL = tuple(f"mcp__conversation-memory__{t}" for t in TOOLS)
MARKER = "QUOKKA-LANTERN-8812"
CONTEXT = re.compile(r"\[claude-chats\] [^\n]*?session_id \"([^\s\"]+)\", "
                     r"(?:messages seq (\d+) to (\d+)|(\d+) messages \(seq (\d+) to (\d+)\))")


def loaded_tools(request):
    """The MCP tools whose schemas a request carries."""
    return {t["name"]: t for t in request.body.get("tools") or [] if t.get("name", "").startswith("mcp__")}


def context_of(request):
    """The claude-chats context a request carries: (text, session id, first seq, last seq), or None."""
    for message in request.body.get("messages") or []:
        content = message.get("content")
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
        for text in texts:
            found = CONTEXT.search(text)
            if found:
                g = found.groups()
                start, end = (g[1], g[2]) if g[1] is not None else (g[4], g[5])
                return text[found.start():], g[0], int(start), int(end)
    return None


class Recall:
    """A scripted model that reads the claude-chats context of the request and, on a prompt holding
    ``@recall``, calls get_conversation with the session id and seq range the context gives
    (``session_id="current"`` instead with ``@recall-current``), then quotes the result."""

    def __init__(self):
        self.calls = []

    def __call__(self, body, kind):
        if kind != "main":
            return None
        messages = body.get("messages") or []
        prompt, index, step = latest_prompt(messages)
        if "@recall" not in prompt:
            return None
        if step == 0:
            found = context_of(_Request(body))
            if not found:   # the test's own assertion says so
                return Reply([Block("text", "no claude-chats context to recall from")])
            _, session, start, end = found
            args = {"session_id": "current" if "@recall-current" in prompt else session,
                    "start_seq": start, "end_seq": end, "limit": 200}
            self.calls.append(args)
            return Reply([Block("tool_use", name=FULL[1], input=args)], stop_reason="tool_use")
        return Reply([Block("text", "recalled")])


class _Request:
    def __init__(self, body):
        self.body = body


def _results(scratch, session_id, tool="get_conversation"):
    t = scratch.transcript(session_id)
    ids = {u["id"] for u in t.tool_uses() if u["name"].endswith("__" + tool)}
    return [tool_result_text(r) for r in t.tool_results() if r["tool_use_id"] in ids]


# -- item 4: the tools in the first request ---------------------------------------------------


def test_the_first_request_of_a_print_session_lists_the_memory_tools(scratch):
    res = scratch.print_turn('what did we do? @mcp(list_recent_sessions {"limit": 3})')
    assert res.returncode == 0, res.stderr
    first = scratch.api.messages_requests()[0]
    tools = loaded_tools(first)
    assert set(FULL) <= set(tools), sorted(tools)
    assert "query" in json.dumps(tools[FULL[0]]["input_schema"])
    assert "after this conversation was compacted" in tools[FULL[0]]["description"]
    names = [u["name"] for u in scratch.transcript(res.session_id).tool_uses()]
    assert names == [FULL[2]], names   # called at once: no ToolSearch


def test_the_first_request_of_an_interactive_session_lists_the_memory_tools(probed):
    with probed.interactive() as ui:
        ui.wait_idle()
        ui.turn("hello from the first interactive turn")
    first = probed.api.messages_requests()[0]
    assert set(FULL) <= set(loaded_tools(first)), sorted(loaded_tools(first))


def test_the_first_request_of_a_new_session_names_the_projects_latest_sessions(probed):
    """Item 2: SessionStart(startup) answers with the project's most recent sessions (a person's: the
    harness's machine-made flag is taken away), and Claude Code puts it into the first request."""
    person = {"CLAUDE_CHATS_MACHINE_MADE": None}
    with probed.interactive(**person) as ui:
        ui.wait_idle()
        earlier = ui.turn("the heron deployment checklist needs a rollback step")["payload"]["session_id"]
    before = len(probed.api.messages_requests())
    with probed.interactive(**person) as ui:
        ui.wait_idle()
        now = ui.turn("where were we?")["payload"]["session_id"]
    assert now != earlier
    first = json.dumps(probed.api.messages_requests()[before].body.get("messages"))
    assert "[claude-chats] The latest sessions of this project are recorded in full" in first, first[:3000]
    assert f'session_id \\"{earlier}\\"' in first and "the heron deployment checklist needs a rollback step" in first
    assert f'session_id \\"{now}\\"' not in first


# -- item 1: what Claude sees after a compaction and a resume --------------------------------


@pytest.fixture
def recall(probed):
    model = Recall()
    probed.api.overrides.append(model)
    return model


def test_after_compact_the_next_request_points_at_the_compacted_turns_and_they_read_back(probed, recall, figures):
    with probed.interactive() as ui:
        ui.wait_idle()
        run = ui.turn(f"remember the lantern code {MARKER} @bash(echo stored-{MARKER})")
        sid = run["payload"]["session_id"]
        ui.turn("and one more turn before the compaction")
        ui.type("/compact")
        ui.wait_for("Compacted", what="the compaction notice")
        compacted_at = time.time()
        ui.turn("what was the lantern code? @recall")
        ui.turn("and from this conversation, by its name? @recall-current")
    after = probed.api.main_after(compacted_at)
    found = context_of(after[0])
    assert found, "the first request after the compaction carries no claude-chats context"
    text, session, start, end = found
    assert session == sid
    shown = probed.show(sid)["messages"]
    (boundary,) = [m["seq"] for m in shown if m["kind"] == "compact_boundary"]
    assert (start, end) == (0, boundary - 1)
    assert MARKER in " ".join(m["content"] for m in shown if start <= m["seq"] <= end)
    assert MARKER not in COMPACT_SUMMARY and COMPACT_SUMMARY in after[0].text()
    figures.append(("after /compact Claude sees", text[:2000].replace("\n", " | ")))
    (recalled, by_current) = _results(probed, sid)
    assert recall.calls == [{"session_id": sid, "start_seq": start, "end_seq": end, "limit": 200},
                            {"session_id": "current", "start_seq": start, "end_seq": end, "limit": 200}]
    for result in (recalled, by_current):
        page = json.loads(result)
        assert page["session"]["session_id"] == sid
        assert any(MARKER in m["text"] for m in page["messages"]), result[:1500]


def test_after_resume_the_next_request_points_at_the_record(probed, recall):
    first = probed.print_turn(f"note the lantern code {MARKER} for later")
    assert first.returncode == 0
    sid = first.session_id
    t0 = time.time()
    resumed = probed.print_turn("what was the code? @recall", "--resume", sid)
    assert resumed.returncode == 0, resumed.stderr
    found = context_of(probed.api.main_after(t0)[0])
    assert found and found[1] == sid
    shown = probed.show(sid)["messages"]
    assert (found[2], found[3]) == (0, max(m["seq"] for m in shown if m["seq"] <= found[3]))
    (result,) = _results(probed, sid)
    assert any(MARKER in m["text"] for m in json.loads(result)["messages"])


# -- item 5: "current" is the session Claude Code is on ------------------------------------------


def _current_page(scratch, session_id):
    (result,) = _results(scratch, session_id)[-1:]
    assert result.startswith("{"), result[:600]
    return json.loads(result)["session"]["session_id"]


def test_current_follows_clear_and_continue(probed):
    call = '@mcp(get_conversation {"session_id": "current", "limit": 5})'
    with probed.interactive() as ui:   # a session is in the journal from its first turn's Stop on
        ui.wait_idle()
        first = ui.turn("the first session")["payload"]["session_id"]
        ui.turn(f"read it {call}")
        ui.type("/clear")
        time.sleep(2)
        ui.wait_idle()
        second = ui.turn("after the clear")["payload"]["session_id"]
        ui.turn(f"read this one {call}")
    assert first != second
    assert _current_page(probed, first) == first
    assert _current_page(probed, second) == second   # CLAUDE_CODE_SESSION_ID still names the first
    continued = probed.print_turn(f"continued {call}", "--continue")
    assert continued.returncode == 0, continued.stderr
    assert continued.session_id == second
    assert _current_page(probed, second) == second   # the server started under a provisional id
