"""MCP search with an embedding server that accepts and never answers (issue 16, item 7).

The journal holds vectors of the configured space (embedded once through a
server that answered); then the provider's URL points at a socket that
accepts connections and never sends a byte, with the default ``embed_timeout``
(30 s). Every ``search_memory`` call must answer within 3 s, from the first
one on, with full-text hits and a note; the searcher backs off from the
provider that just failed instead of waiting on it again at each call.
"""

import asyncio
import json
import time

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from claude_chats.mcp.server import create_server
from tests.support.stand_ins import EmbedServer, Silent, chats, provider_env, turns, write

BOUND = 3.0      # seconds, each call
CALLS = 4


def history(folder):
    write(folder / "sess-osprey.jsonl", turns([f"the osprey cache eviction bug, step {i}" for i in range(8)],
                                               "sess-osprey", cwd="/work/osprey"))


async def _calls():
    times, answers = [], []
    async with Client(create_server()) as client:
        for i in range(CALLS):
            started = time.monotonic()
            result = await asyncio.wait_for(client.call_tool(
                "search_memory", {"query": f"osprey cache eviction step {i}", "mode": "hybrid"}), 20)
            times.append(time.monotonic() - started)
            answers.append(result.structured_content)
        started = time.monotonic()
        with pytest.raises(ToolError) as semantic:
            await asyncio.wait_for(client.call_tool("search_memory", {"query": "osprey", "mode": "semantic"}), 20)
        times.append(time.monotonic() - started)
    return times, answers, str(semantic.value)


@pytest.mark.parametrize("name", ["ollama", "openai"])
def test_mcp_search_with_a_silent_embedding_server_answers_within_3_s_every_call(name, tmp_path, monkeypatch):
    pytest.importorskip({"ollama": "httpx", "openai": "openai"}[name])
    history(tmp_path / "projects" / "osprey")
    chats("import", str(tmp_path / "projects"))
    answering = EmbedServer()
    try:
        for key, value in provider_env(name, answering.url).items():
            monkeypatch.setenv(key, value)
        assert json.loads(chats("sync", "--json"))["embedded"] == 8        # vectors of the configured space
    finally:
        answering.close()
    silent = Silent()
    try:
        for key, value in provider_env(name, silent.url).items():
            monkeypatch.setenv(key, value)
        times, answers, semantic = asyncio.run(_calls())
    finally:
        silent.close()
    print(f"[silent provider] {name}: MCP calls took " + ", ".join(f"{t:.2f} s" for t in times)
          + f"; {silent.accepted} connection(s) to the silent server")
    assert max(times) < BOUND, times
    for answer in answers:
        assert answer["hits"] and answer["modes_run"] == ["fulltext"], answer
        assert any("embedding model" in note for note in answer["notes"]), answer["notes"]
    assert "embedding model" in semantic
    assert silent.accepted <= 2, f"{silent.accepted} connections: the searcher did not back off"
