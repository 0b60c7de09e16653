"""A search that finds nothing among a person's sessions says how many machine-made ones match, and how to
include them (found inside the real Claude Code, issue 21): ``chats search`` as a process and the MCP tool.

Machine-made sessions (scripts, SDK runs, ``claude -p``) are left out by default (issue 17); when only they
hold the words, "nothing found" hid that the answer was one option away.
"""

import asyncio
import json
import subprocess

from fastmcp import Client

from claude_chats.mcp.server import create_server
from claude_chats.stores import open_searcher
from tests.support import lines
from tests.support.hooks import CHATS

SCRIPTED = {"sess-sdk-1": "sdk-py", "sess-sdk-2": "sdk-cli", "sess-sdk-3": "sdk-ts"}


def recorded(folder):
    """Three machine-made sessions about the gannet report, and a person's about something else."""
    folder.mkdir(parents=True)
    for session, entrypoint in SCRIPTED.items():
        (folder / f"{session}.jsonl").write_bytes(lines.encode(
            lines.user(f"run the nightly gannet report ({session})", session=session, entrypoint=entrypoint),
            lines.assistant("the gannet report printed: all green", session=session, entrypoint=entrypoint)))
    (folder / "sess-person.jsonl").write_bytes(lines.encode(
        lines.user("why does the cormorant loader skip empty rows", session="sess-person", entrypoint="cli"),
        lines.assistant("the cormorant loader drops rows without an id", session="sess-person", entrypoint="cli")))
    chats("import", str(folder))


def chats(*args):
    proc = subprocess.run([*CHATS, *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


def search_tool(**arguments):
    async def call():
        async with Client(create_server(lambda: open_searcher(use_postgres=False))) as client:
            return (await client.call_tool("search_memory", arguments)).structured_content
    return asyncio.run(call())


def machine_note(notes):
    return [n for n in notes if "machine-made" in n]


def test_nothing_among_a_persons_sessions_says_how_many_machine_made_ones_match(tmp_path):
    recorded(tmp_path / "projects")

    proc = chats("search", "gannet report", "--mode", "fulltext", "--local")
    assert proc.stdout == ""
    assert "3 machine-made sessions" in proc.stderr and "--origin any" in proc.stderr, proc.stderr
    result = json.loads(chats("search", "gannet report", "--mode", "fulltext", "--local", "--json").stdout)
    assert result["hits"] == [] and len(machine_note(result["notes"])) == 1
    widened = json.loads(chats("search", "gannet report", "--mode", "fulltext", "--local", "--origin", "any",
                               "--json").stdout)
    assert {h["session_id"] for h in widened["hits"]} == set(SCRIPTED)   # what the note promised

    result = search_tool(query="gannet report", mode="fulltext")
    assert result["hits"] == []
    (note,) = machine_note(result["notes"])
    assert "3 machine-made sessions" in note and 'origin="any"' in note
    assert {h["session_id"] for h in search_tool(query="gannet report", mode="fulltext", origin="any")["hits"]} \
        == set(SCRIPTED)

    # a person's session matches: no such note; nothing matches anywhere: the plain note
    assert machine_note(search_tool(query="cormorant loader", mode="fulltext")["notes"]) == []
    nothing = search_tool(query="pelican harbour", mode="fulltext")["notes"]
    assert machine_note(nothing) == [] and any(n.startswith("nothing found") for n in nothing)
    # the person asked for machine-made ones, or for both: nothing more to offer
    assert machine_note(search_tool(query="cormorant loader", mode="fulltext", origin="machine")["notes"]) == []
