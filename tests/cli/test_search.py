"""``chats search``: modes, filters and --json with the MCP tool's result shape."""

import asyncio
import json

from fastmcp import Client

from claude_chats import paths
from claude_chats.localstore.journal import Journal
from claude_chats.mcp.server import create_server
from claude_chats.stores import open_searcher
from tests.support.cli import chats
from tests.support.journals import write_corpus


def imported(tmp_path):
    with Journal.open(paths.journal_path()) as journal:
        journal.import_files(write_corpus(tmp_path / "projects"))


def test_json_has_the_tool_shape(tmp_path):
    imported(tmp_path)
    cli = json.loads(chats("search", "port 5432", "--json").output)

    async def tool():
        async with Client(create_server(lambda: open_searcher(use_postgres=False))) as client:
            return (await client.call_tool("search_memory", {"query": "port 5432", "limit": 10})).structured_content
    mcp = asyncio.run(tool())
    assert set(cli) == set(mcp) and set(cli["hits"][0]) == set(mcp["hits"][0])
    assert cli["hits"] == mcp["hits"] and cli["source"] == "local"
    assert cli["modes_run"] == ["fulltext"] and any("no vectors" in n for n in cli["notes"])


def test_modes_and_filters(tmp_path):
    imported(tmp_path)
    found = json.loads(chats("search", "migration", "--mode", "fulltext", "--project", "/work/alpha",
                             "--role", "assistant", "--until", "2026-01-01", "--no-subagents", "--json").output)
    assert {(h["session_id"], h["role"]) for h in found["hits"]} == {("s-migrate", "assistant")}
    capped = json.loads(chats("search", "schema migration", "--mode", "fulltext", "--per-session", "1",
                              "--json").output)
    assert [h["session_id"] for h in capped["hits"]].count("s-long") == 1
    session = json.loads(chats("search", "note", "--session", "s-long", "--since", "2026-01-07",
                               "--kind", "text", "-n", "3", "--per-session", "0", "--local", "--json").output)
    assert len(session["hits"]) == 3 and {h["session_id"] for h in session["hits"]} == {"s-long"}


def test_text_output_and_errors(tmp_path):
    imported(tmp_path)
    shown = chats("search", "OOMKilled", "--mode", "fulltext")
    assert shown.exit_code == 0 and "s-k8s #0  user/text" in shown.output and "[local" in shown.output
    refused = chats("search", "OOMKilled", "--mode", "semantic")
    assert refused.exit_code == 1 and "no vectors" in refused.output and "Traceback" not in refused.output
    bad = chats("search", "x", "--since", "soon")
    assert bad.exit_code == 1 and "ISO date" in bad.output
