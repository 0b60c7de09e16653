"""The conversation-memory MCP server through a real FastMCP ``Client`` in memory."""

import asyncio
import json

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from claude_chats.mcp.server import create_server
from tests.support.fakes import HashEmbedder, OtherEmbedder
from tests.support.journals import searcher_opener, sessions_of


def call(server, tool, **arguments):
    """``tools/call`` through an in-memory client; the tool's structured result."""
    async def go():
        async with Client(server) as client:
            return (await client.call_tool(tool, arguments)).structured_content
    return asyncio.run(go())


def failure(server, tool, **arguments):
    with pytest.raises(ToolError) as info:
        call(server, tool, **arguments)
    return str(info.value)


@pytest.fixture
def server(synced_journal):
    return create_server(searcher_opener(synced_journal, HashEmbedder))


def test_lists_three_tools_with_descriptions(server):
    async def go():
        async with Client(server) as client:
            return {t.name: t for t in await client.list_tools()}
    tools = asyncio.run(go())
    assert set(tools) == {"search_memory", "get_conversation", "list_recent_sessions"}
    search = tools["search_memory"]
    assert "sentence that would appear in the conversation" in search.description
    assert "When nothing is found" in search.description
    assert search.annotations.read_only_hint is True
    assert {"query", "limit", "project_path", "mode", "session_id", "role", "since", "until",
            "include_subagents", "kinds", "max_chars", "origin"} == set(search.input_schema["properties"])
    assert "next_start_seq" in tools["get_conversation"].description


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "fulltext"])
def test_search_memory_each_mode(server, mode):
    result = call(server, "search_memory", query="the pod is OOMKilled in CrashLoopBackOff", mode=mode)
    assert result["source"] == "local" and result["mode"] == mode
    assert result["modes_run"] == {"hybrid": ["fulltext", "semantic"], "semantic": ["semantic"],
                                   "fulltext": ["fulltext"]}[mode]
    hit = result["hits"][0]
    assert hit["session_id"] == "s-k8s" and hit["source"] == "local"
    assert {"session_name", "project_path", "git_branch", "role", "kind", "seq", "timestamp", "text",
            "context", "ranks", "scores", "score"} <= set(hit)


def test_search_memory_filters_and_budget(server):
    result = call(server, "search_memory", query="migration", project_path="/work/alpha", role="assistant",
                  include_subagents=False, since="2026-01-01", until="2026-01-01", mode="fulltext", limit=10)
    assert {h["session_id"] for h in result["hits"]} == {"s-migrate"}
    assert {h["role"] for h in result["hits"]} == {"assistant"}
    small = call(server, "search_memory", query="migration", limit=20, max_chars=1500)
    assert small["truncated"] and len(json.dumps(small, ensure_ascii=False)) <= 1500


def test_bad_arguments_are_tool_errors(server):
    assert "ISO date" in failure(server, "search_memory", query="x", since="yesterday")
    assert "empty" in failure(server, "search_memory", query="  ")
    message = failure(server, "get_conversation", session_id="nope")
    assert "no session 'nope'" in message and "Traceback" not in message


def test_get_conversation_pages(server):
    first = call(server, "get_conversation", session_id="s-long", limit=12)
    assert [m["seq"] for m in first["messages"]] == list(range(12)) and first["next_start_seq"] == 12
    assert first["session"]["message_count"] == 30 and first["source"] == "local"
    rest = call(server, "get_conversation", session_id="s-long", start_seq=first["next_start_seq"], limit=100)
    assert rest["messages"][-1]["seq"] == 29 and rest["next_start_seq"] is None
    window = call(server, "get_conversation", session_id="s-migrate", start_seq=1, end_seq=2)
    assert [m["seq"] for m in window["messages"]] == [1, 2]
    budget = call(server, "get_conversation", session_id="s-long", limit=100, max_chars=1000)
    assert 1 <= budget["returned"] < 30 and budget["next_start_seq"] == budget["returned"]


def test_list_recent_sessions(server):
    result = call(server, "list_recent_sessions", limit=2)
    assert [s["session_id"] for s in result["sessions"]] == ["s-long", "s-async"]
    beta = call(server, "list_recent_sessions", project_path="/work/beta")
    assert {s["session_id"] for s in beta["sessions"]} == {"s-react", "s-rust"}
    assert {"name", "project_path", "git_branch", "started_at", "last_at", "message_count",
            "machine"} <= set(beta["sessions"][0])


def test_mismatched_model_is_refused_through_the_tool(synced_journal):
    server = create_server(searcher_opener(synced_journal, OtherEmbedder))
    for mode in ("semantic", "hybrid"):
        message = failure(server, "search_memory", query="flaky migration test", mode=mode)
        assert "hash-32-other" in message and "hash-32 " in message and "re-embed" in message
    assert sessions_of(call(server, "search_memory", query="flaky migration test", mode="fulltext"))


def test_stores_are_opened_once_in_the_lifespan(synced_journal):
    opened = []

    def open_searcher():
        opened.append(1)
        return searcher_opener(synced_journal, HashEmbedder)()

    server = create_server(open_searcher)

    async def go():
        async with Client(server) as client:
            for _ in range(3):
                await client.call_tool("search_memory", {"query": "docker", "mode": "fulltext"})
            await client.call_tool("list_recent_sessions", {})
    asyncio.run(go())
    assert opened == [1]


def test_stores_that_cannot_open_give_a_tool_error():
    from claude_chats.errors import JournalError

    def broken():
        raise JournalError("cannot open the journal /nowhere/journal.db: unable to open database file")

    message = failure(create_server(broken), "list_recent_sessions")
    assert "cannot open the journal" in message
