"""MCP arguments that reached Postgres or Python's limits as masked errors (issue 16, item 9).

The server as Claude Code runs it: ``create_server()`` with the configured stores (the
journal, and Postgres holding the same messages), called through an in-memory FastMCP
client. Every call gets an answer or a ``ToolError`` saying what is wrong, never the
masked "Error calling tool".
"""

import asyncio
import json

import pytest
from click.testing import CliRunner
from fastmcp import Client
from fastmcp.exceptions import ToolError

from claude_chats import models
from claude_chats.cli import main
from claude_chats.mcp.server import create_server
from tests.support.fakes import HashEmbedder


@pytest.fixture
def server(tmp_path, pg_db_url, monkeypatch):
    """Two sessions in the journal and in Postgres; the server configured like the person's."""
    monkeypatch.setitem(models.PROVIDERS, HashEmbedder.name, HashEmbedder)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", HashEmbedder.name)
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    rows = [{"type": "user", "uuid": f"u-{i}", "sessionId": f"s-{i}", "cwd": "/work/proj",
             "timestamp": f"2026-01-0{i + 1}T10:00:00.000Z",
             "message": {"role": "user", "content": f"the reactor alarm number {i}"}} for i in range(2)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    runner = CliRunner()
    assert runner.invoke(main, ["import", str(path)], catch_exceptions=False).exit_code == 0
    assert json.loads(runner.invoke(main, ["sync", "--json"], catch_exceptions=False).output)["pushed"] == 2
    return create_server()


def call(server, tool, **arguments):
    async def go():
        async with Client(server) as client:
            await client.call_tool("list_recent_sessions", {"limit": 1})   # the stores are open
            return (await client.call_tool(tool, arguments)).structured_content
    return asyncio.run(go())


def answer_or_tool_error(server, tool, **arguments):
    """The structured result, or the ToolError's message; never the masked error."""
    try:
        return call(server, tool, **arguments)
    except ToolError as exc:
        message = str(exc)
        assert "Error calling tool" not in message, message
        return message


@pytest.mark.parametrize("arguments", [
    {"query": "reactor", "session_id": "s-0\x00x"},
    {"query": "reactor", "project_path": "/work/\x00proj"},
    {"query": "reactor", "until": "9999-12-31"},
    {"query": "reactor", "since": "0001-01-01T00:00:00+05:00"},
    {"query": "reactor", "until": "0001-01-01T00:00:00+05:00"},
], ids=["nul session_id", "nul project_path", "until 9999-12-31", "since year 0", "until year 0"])
def test_search_memory_answers_from_postgres(server, arguments):
    result = answer_or_tool_error(server, "search_memory", mode="fulltext", **arguments)
    if isinstance(result, dict):
        assert result["source"] == "postgres", result["notes"]


def test_the_far_bounds_select_what_no_bound_selects(server):
    everything = call(server, "search_memory", query="reactor", mode="fulltext")
    assert len(everything["hits"]) == 2
    for bound in ({"until": "9999-12-31"}, {"since": "0001-01-01T00:00:00+05:00"}):
        assert call(server, "search_memory", query="reactor", mode="fulltext", **bound)["hits"] == everything["hits"]
    assert call(server, "search_memory", query="reactor", mode="fulltext",
                until="0001-01-01T00:00:00+05:00")["hits"] == []


def test_get_conversation_and_list_with_a_nul_byte(server):
    message = answer_or_tool_error(server, "get_conversation", session_id="s-0\x00x")
    assert isinstance(message, str) and "no session" in message
    listed = answer_or_tool_error(server, "list_recent_sessions", project_path="/work/\x00proj")
    assert isinstance(listed, dict) and listed["sessions"] == []
