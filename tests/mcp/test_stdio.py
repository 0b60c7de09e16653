"""``chats mcp`` as a subprocess over stdio, with the real test model, answering the three tools."""

import asyncio
import os
import time

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from claude_chats import paths
from claude_chats.localstore.journal import Journal
from claude_chats.models import with_text
from tests.support.hooks import CHATS
from tests.support.journals import sync_corpus, write_corpus


def test_chats_mcp_over_stdio(tmp_path, minilm, test_model_path):
    with Journal.open(paths.journal_path()) as journal:
        journal.import_files(write_corpus(tmp_path / "projects"))
        sync_corpus(journal, with_text(minilm))   # the configured embedded text, as `chats sync` embeds
    env = {**os.environ, "CLAUDE_CHATS_MODEL": str(test_model_path), "CLAUDE_CHATS_THREADS": "2"}
    transport = StdioTransport(CHATS[0], ["mcp"], env=env, cwd=str(tmp_path), keep_alive=False)

    async def session():
        started = time.monotonic()
        async with Client(transport) as client:
            tools = {t.name for t in await client.list_tools()}
            first_list = time.monotonic() - started
            found = (await client.call_tool("search_memory", {
                "query": "the test fails now and then because the id counter is never reset"})).structured_content
            page = (await client.call_tool("get_conversation", {
                "session_id": found["hits"][0]["session_id"], "start_seq": 0, "end_seq": 1})).structured_content
            recent = (await client.call_tool("list_recent_sessions", {"limit": 3})).structured_content
        return tools, first_list, found, page, recent

    tools, first_list, found, page, recent = asyncio.run(session())
    assert tools == {"search_memory", "get_conversation", "list_recent_sessions"}
    assert first_list < 10
    assert found["source"] == "local" and found["modes_run"] == ["fulltext", "semantic"]
    assert found["hits"][0]["session_id"] == "s-migrate", found
    assert [m["seq"] for m in page["messages"]] == [0, 1]
    assert [s["session_id"] for s in recent["sessions"]] == ["s-long", "s-async", "s-k8s"]
