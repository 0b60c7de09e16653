"""``"current"``: the session and project of the Claude Code process that started ``chats mcp``.

Claude Code 2.1.332 gives the server ``CLAUDE_CODE_SESSION_ID`` once; its pid file
(``<claude config dir>/sessions/<pid>.json``) follows /clear, /resume and --continue.
"""

import asyncio
import json
import os

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from claude_chats import paths
from claude_chats.errors import SearchError
from claude_chats.mcp import current
from claude_chats.mcp.server import create_server
from tests.support.fakes import HashEmbedder
from tests.support.journals import searcher_opener, sessions_of


def pid_file(pid, **record):
    folder = os.path.join(paths.claude_config_dir(), "sessions")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{pid}.json"), "w") as fh:
        json.dump({"pid": pid, **record}, fh)


def test_anything_but_current_is_left_as_it_is():
    assert current.session_id("s-1", environ={}) == "s-1"
    assert current.session_id(None, environ={}) is None
    assert current.project_path("/work/a", environ={}) == "/work/a"


def test_the_environment_names_the_session_and_the_project():
    env = {"CLAUDE_CODE_SESSION_ID": "s-env", "CLAUDE_PROJECT_DIR": "/work/proj"}
    assert current.session_id("current", environ=env, parent=4242) == "s-env"
    assert current.project_path("current", environ=env, parent=4242) == "/work/proj"


def test_claude_codes_pid_file_wins_over_a_stale_environment():
    """After /clear the server still has the first session's id; the pid file has the new one."""
    pid_file(4242, sessionId="s-after-clear", cwd="/work/proj")
    env = {"CLAUDE_CODE_SESSION_ID": "s-before-clear"}
    assert current.session_id("current", environ=env, parent=4242) == "s-after-clear"
    assert current.project_path("current", environ={}, parent=4242) == "/work/proj"
    pid_file(4343, sessionId="s-other")   # another Claude Code process's file is not ours
    assert current.session_id("current", environ=env, parent=4141) == "s-before-clear"


def test_a_pid_file_of_another_pid_or_unreadable_is_ignored():
    folder = os.path.join(paths.claude_config_dir(), "sessions")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "4242.json"), "w") as fh:
        json.dump({"pid": 1, "sessionId": "s-wrong"}, fh)
    with open(os.path.join(folder, "4343.json"), "w") as fh:
        fh.write("{not json")
    env = {"CLAUDE_CODE_SESSION_ID": "s-env"}
    assert current.session_id("current", environ=env, parent=4242) == "s-env"
    assert current.session_id("current", environ=env, parent=4343) == "s-env"


def test_current_without_claude_code_says_what_to_pass():
    with pytest.raises(SearchError, match="list_recent_sessions"):
        current.session_id("current", environ={}, parent=4242)
    with pytest.raises(SearchError, match="absolute folder"):
        current.project_path("current", environ={}, parent=4242)


def call(server, tool, **arguments):
    async def go():
        async with Client(server) as client:
            return (await client.call_tool(tool, arguments)).structured_content
    return asyncio.run(go())


def test_the_tools_take_current(synced_journal, monkeypatch):
    server = create_server(searcher_opener(synced_journal, HashEmbedder))
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "s-long")
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "/work/beta")
    page = call(server, "get_conversation", session_id="current", limit=3)
    assert page["session"]["session_id"] == "s-long"
    found = call(server, "search_memory", query="migration", session_id="current", mode="fulltext")
    assert found["hits"] and set(sessions_of(found)) == {"s-long"}   # s-migrate has "migration" too
    recent = call(server, "list_recent_sessions", project_path="current")
    assert {s["session_id"] for s in recent["sessions"]} == {"s-react", "s-rust"}
    in_project = call(server, "search_memory", query="the", project_path="current", mode="fulltext", limit=20)
    assert in_project["hits"] and {h["project_path"] for h in in_project["hits"]} == {"/work/beta"}
    pid_file(os.getppid(), sessionId="s-migrate")   # /clear, /resume or --continue moved the process on
    assert call(server, "get_conversation", session_id="current", limit=1)["session"]["session_id"] == "s-migrate"


def test_current_without_claude_code_is_a_tool_error(synced_journal):
    server = create_server(searcher_opener(synced_journal, HashEmbedder))
    with pytest.raises(ToolError, match="list_recent_sessions"):
        call(server, "get_conversation", session_id="current")
