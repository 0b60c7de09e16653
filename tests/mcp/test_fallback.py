"""A Postgres outage in the middle of an MCP session: the tools answer from the journal, then
from Postgres again once it is back, without restarting the server."""

import asyncio
import time

from fastmcp import Client

from claude_chats.mcp.server import create_server
from claude_chats.pgstore.search import PgLink
from tests.support.fakes import HashEmbedder, Proxy
from tests.support.journals import build_journal, searcher_opener, sync_corpus


def test_outage_mid_session(tmp_path, pg_db_url):
    journal = build_journal(tmp_path)
    sync_corpus(journal, HashEmbedder(), pg_db_url)
    proxy = Proxy(pg_db_url).start()

    def open_searcher():
        link = PgLink(proxy.url, retry_after=0.3)
        link.start()
        return searcher_opener(journal, HashEmbedder, link)()

    server = create_server(open_searcher)

    async def search(client):
        started = time.monotonic()
        result = await client.call_tool("search_memory", {"query": "port 5432 already in use"})
        return result.structured_content, time.monotonic() - started

    async def session():
        async with Client(server) as client:
            online, _ = await search(client)
            proxy.stop()
            offline, seconds = await search(client)
            page = (await client.call_tool("get_conversation", {"session_id": "s-docker"})).structured_content
            listed = (await client.call_tool("list_recent_sessions", {})).structured_content
            proxy.start()
            await asyncio.sleep(0.4)
            back, _ = await search(client)
            return online, offline, seconds, page, listed, back

    try:
        online, offline, seconds, page, listed, back = asyncio.run(session())
    finally:
        proxy.stop()
        journal.close()
    assert online["source"] == "postgres" and online["hits"][0]["session_id"] == "s-docker"
    assert offline["source"] == "local" and offline["hits"][0]["session_id"] == "s-docker"
    assert seconds < 2.0
    assert any("Postgres unreachable" in n for n in offline["notes"])
    assert page["source"] == "local" and listed["source"] == "local"
    assert back["source"] == "postgres" and back["notes"] == []
