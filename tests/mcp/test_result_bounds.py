"""Every MCP tool's result fits the budget it was given, whatever the arguments and the stored text
(issue 16, item 8).

Claude Code caps an MCP tool's output (25,000 tokens by default): ``search_memory``,
``get_conversation`` and ``list_recent_sessions`` each take ``max_chars`` and their
result, as JSON, never exceeds it. Hypothesis draws the stored text (a ``/rename``
name, a project folder, a git branch and messages of any size up to megabytes,
with quotes, backslashes, control characters and non-ASCII text that JSON writes
longer) and the arguments (a query of up to a megabyte, any budget the tool
accepts); an error message is bounded too. A huge query is cut to what is
searched, says so, and answers in well under a second.
"""

import asyncio
import json
import os
import pathlib
import tempfile
import time
import uuid as uuidlib

from click.testing import CliRunner
from fastmcp import Client
from fastmcp.exceptions import ToolError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claude_chats.cli import main
from claude_chats.mcp.server import create_server
from tests.support.stand_ins import line, write

LONG = os.environ.get("CLAUDE_CHATS_LONG_TESTS") == "1"
ALPHABET = st.sampled_from(['a', 'Z', '7', ' ', '"', '\\', '\n', '\t', '\x01', 'é', '漢', '😀', '/', '_'])
PIECES = st.text(ALPHABET, min_size=1, max_size=12)
SIZES = st.sampled_from([0, 1, 50, 300, 5_000, 120_000, 1_000_000])


def blob(piece, count):
    """``count`` characters made of ``piece`` (a megabyte without drawing a megabyte)."""
    return (piece * (count // len(piece) + 1))[:count] if count else ""


stored_history = st.fixed_dictionaries({
    "name": st.tuples(PIECES, SIZES), "cwd": st.tuples(PIECES, SIZES), "branch": st.tuples(PIECES, SIZES),
    "messages": st.lists(st.tuples(PIECES, SIZES), min_size=1, max_size=4),
})

search_args = st.fixed_dictionaries({
    "query": st.tuples(PIECES, st.sampled_from([1, 40, 3_000, 1_000_000])),
    "max_chars": st.integers(1000, 100_000), "limit": st.integers(1, 50),
    "mode": st.sampled_from(["hybrid", "fulltext", "semantic"]),
})
page_args = st.fixed_dictionaries({
    "max_chars": st.integers(1000, 200_000), "limit": st.integers(1, 500),
    "start_seq": st.one_of(st.none(), st.integers(0, 5)), "known": st.booleans(),
    "id": st.tuples(PIECES, st.sampled_from([1, 300, 200_000])),
})
list_args = st.fixed_dictionaries({"max_chars": st.integers(1000, 200_000), "limit": st.integers(1, 200),
                                   "include_subagents": st.booleans()})


def write_history(folder, history):
    session = f"sess-{uuidlib.uuid4().hex[:8]}"
    cwd = "/work/" + blob(*history["cwd"]).replace("\x00", "")
    branch = blob(*history["branch"]) or "main"
    rows = [line("user" if i % 2 == 0 else "assistant", "bounded words " + blob(piece, count), session, i, cwd=cwd,
                 branch=branch) for i, (piece, count) in enumerate(history["messages"])]
    name = blob(*history["name"]).strip()
    if name:
        rows.append({"type": "custom-title", "customTitle": name, "sessionId": session})
    write(folder / f"{session}.jsonl", rows)
    return session


def within(result, budget):
    """The tool's structured result and the JSON text it sends, each within ``budget`` characters."""
    structured = json.dumps(result.structured_content, ensure_ascii=False)
    assert len(structured) <= budget, (len(structured), budget)
    for block in result.content:
        assert len(getattr(block, "text", "")) <= budget, (len(block.text), budget)


async def _exercise(session, searches, pages, listings):
    async with Client(create_server()) as client:
        for args in searches:
            query = blob(*args["query"]).strip() or "bounded"
            try:
                result = await client.call_tool("search_memory", {
                    "query": query, "max_chars": args["max_chars"], "limit": args["limit"], "mode": args["mode"]})
            except ToolError as exc:
                assert len(str(exc)) <= 1000, len(str(exc))
                continue
            within(result, args["max_chars"])
        for args in pages:
            sid = session if args["known"] else blob(*args["id"])
            try:
                result = await client.call_tool("get_conversation", {
                    "session_id": sid, "max_chars": args["max_chars"], "limit": args["limit"],
                    "start_seq": args["start_seq"]})
            except ToolError as exc:
                assert len(str(exc)) <= 1000, len(str(exc))
                continue
            within(result, args["max_chars"])
        for args in listings:
            within(await client.call_tool("list_recent_sessions", args), args["max_chars"])


@settings(max_examples=40 if LONG else 8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(histories=st.lists(stored_history, min_size=1, max_size=3),
       searches=st.lists(search_args, min_size=1, max_size=4), pages=st.lists(page_args, min_size=1, max_size=3),
       listings=st.lists(list_args, min_size=1, max_size=2))
def test_every_tool_result_fits_its_budget(histories, searches, pages, listings):
    with tempfile.TemporaryDirectory() as home:
        folder = pathlib.Path(home) / "projects"
        folder.mkdir()
        sessions = [write_history(folder, h) for h in histories]
        previous = os.environ.get("CLAUDE_CHATS_HOME")
        os.environ["CLAUDE_CHATS_HOME"] = os.path.join(home, "chats")
        try:
            result = CliRunner().invoke(main, ["import", str(folder)], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            asyncio.run(_exercise(sessions[0], searches, pages, listings))
        finally:
            os.environ["CLAUDE_CHATS_HOME"] = previous


HUGE = "kestrel harbour " + " ".join(f"zq{i}w" for i in range(130_000))   # a megabyte of distinct words


def test_a_megabyte_query_is_cut_says_so_and_answers_fast(tmp_path):
    folder = tmp_path / "projects"
    folder.mkdir()
    write_history(folder, {"name": ("n", 10), "cwd": ("c", 10), "branch": ("b", 4),
                           "messages": [("kestrel ", 100), ("harbour ", 100)]})
    assert CliRunner().invoke(main, ["import", str(folder)], catch_exceptions=False).exit_code == 0

    async def call():
        async with Client(create_server()) as client:
            await client.call_tool("list_recent_sessions", {})          # the stores are open
            started = time.monotonic()
            result = await client.call_tool("search_memory", {"query": HUGE, "mode": "fulltext"})
            return result, time.monotonic() - started

    result, seconds = asyncio.run(call())
    answer = result.structured_content
    print(f"[huge query] {len(HUGE):,} characters answered in {seconds:.2f} s")
    assert seconds < 1.0, seconds
    assert answer["hits"] and len(answer["query"]) <= 300
    assert any("the query was cut" in note for note in answer["notes"]), answer["notes"]
    within(result, 12_000)
