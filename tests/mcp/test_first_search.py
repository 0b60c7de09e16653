"""The MCP server's first search while its warm-up still asks the embedding model its space.

``chats mcp`` opens the stores and warms them in a thread of its own: for an Ollama model, the
warm-up's first request asks the model its dimensions. A search that came while that request was
in flight ran full text alone ("the embedding model has not answered for its embedding space for
0 s"), so the first memory search of every Claude Code session with a local Ollama was a full-text
one (bench_scale at 1M: three first searches out of three). It now waits for that request, within
its own deadline, and runs hybrid. A server that never answers still costs one search its deadline
and no more (``test_slow_provider.py``).
"""

import asyncio
import json
import threading

from fastmcp import Client

from claude_chats.mcp.server import create_server
from tests.support.stand_ins import EmbedServer, chats, provider_env, turns, write


def test_the_first_search_waits_for_the_warm_up_and_runs_hybrid(tmp_path, monkeypatch):
    write(tmp_path / "projects" / "osprey" / "sess-osprey.jsonl",
          turns([f"the osprey cache eviction bug, step {i}" for i in range(8)], "sess-osprey", cwd="/work/osprey"))
    chats("import", str(tmp_path / "projects"))
    answering = EmbedServer()
    try:
        for key, value in provider_env("ollama", answering.url).items():
            monkeypatch.setenv(key, value)
        assert json.loads(chats("sync", "--json"))["embedded"] == 8
    finally:
        answering.close()
    slow = EmbedServer(gate_word="dimensions probe")   # the warm-up's question waits until released
    try:
        for key, value in provider_env("ollama", slow.url).items():
            monkeypatch.setenv(key, value)

        async def first_search():
            async with Client(create_server()) as client:
                # the stores open by themselves after a grace period, and the warm-up asks the model
                assert await asyncio.to_thread(slow.held.wait, 20), "the warm-up never asked the model"
                threading.Timer(0.3, slow.release.set).start()   # answered 0.3 s into the search's 1.5 s
                result = await asyncio.wait_for(client.call_tool(
                    "search_memory", {"query": "osprey cache eviction", "mode": "hybrid"}), 20)
                return result.structured_content

        answer = asyncio.run(first_search())
    finally:
        slow.close()
    assert answer["modes_run"] == ["fulltext", "semantic"], answer["notes"]
    assert not any("embedding model" in note for note in answer["notes"]), answer["notes"]
    assert answer["hits"] and answer["hits"][0]["session_id"] == "sess-osprey"
