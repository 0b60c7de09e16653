"""The conversation-memory MCP tools called from inside Claude Code 2.1.332, and
the plugin (issue 12 defect 7).

MCP tools are deferred in 2.1.332: the scripted model loads a tool's schema
with ``ToolSearch {"query": "select:mcp__conversation-memory__<tool>"}`` and
then calls it; the tests read the tool results from the transcript.
"""

import json
import shutil

from .harness import PROJECT_ROOT, Scratch, tool_result_text

PLUGIN_FILES = (".claude-plugin", "hooks", ".mcp.json")


KEY = "conversation-memory@claude-chats"   # the plugin conversation-memory, marketplace claude-chats


def _mcp_results(scratch, session_id, tool):
    """The text of the results of MCP tool ``tool`` in a session's transcript."""
    t = scratch.transcript(session_id)
    ids = {u["id"] for u in t.tool_uses() if u["name"].endswith("__" + tool)}
    assert ids, f"{tool} was never called: {[u['name'] for u in t.tool_uses()]}"
    return [tool_result_text(r) for r in t.tool_results() if r["tool_use_id"] in ids]


def _earlier_session(scratch):
    res = scratch.print_turn("remember the zeppelin hangar code word @bash(echo hangar-tango-7)")
    assert res.returncode == 0
    return res.session_id


def test_memory_tools_from_inside_claude_code_find_the_right_session(scratch):
    earlier = _earlier_session(scratch)
    calls = [
        # print-mode sessions are machine-made: asked for by name (origin any)
        ("search_memory", {"query": "zeppelin hangar", "mode": "fulltext", "origin": "any"}),
        ("get_conversation", {"session_id": earlier}),
        ("list_recent_sessions", {"origin": "any"}),
    ]
    for tool, args in calls:
        res = scratch.print_turn(f"use memory @mcp({tool} {json.dumps(args)})")
        assert res.returncode == 0, res.stderr
        # the tool was deferred and loaded through ToolSearch first
        t = scratch.transcript(res.session_id)
        names = [u["name"] for u in t.tool_uses()]
        assert names[0] == "ToolSearch" and names[1] == f"mcp__conversation-memory__{tool}", names
        (result,) = _mcp_results(scratch, res.session_id, tool)
        assert earlier in result, f"{tool} did not name session {earlier}: {result[:500]}"
        if tool == "get_conversation":
            assert "remember the zeppelin hangar code word" in result
            assert "hangar-tango-7" in result
        if tool == "search_memory":
            payload = json.loads(result)
            assert payload["hits"][0]["session_id"] == earlier
    # what Claude Code sent: once ToolSearch has loaded it, the tool's schema is in the request
    full = "mcp__conversation-memory__search_memory"
    loaded = [t for r in scratch.api.messages_requests() for t in r.body.get("tools") or [] if t.get("name") == full]
    assert loaded and "query" in json.dumps(loaded[0].get("input_schema")), [
        [t.get("name") for t in r.body.get("tools") or []] for r in scratch.api.messages_requests()]


def test_plugin_validates(scratch):
    proc = scratch.claude("plugin", "validate", str(PROJECT_ROOT))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "✘" not in proc.stdout


def test_plugin_from_a_local_marketplace_records_and_serves_memory(tmp_path, claude_code, fake_api):
    s = Scratch(tmp_path / "cc", claude_code, fake_api.url)  # no `chats install`: the plugin only
    s.api = fake_api
    market = tmp_path / "market"
    market.mkdir()
    for name in PLUGIN_FILES:
        src = PROJECT_ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, market / name)
    for args in (("plugin", "marketplace", "add", str(market)), ("plugin", "install", KEY)):
        proc = s.claude(*args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert s.settings()["enabledPlugins"] == {KEY: True}
    installed = json.loads((s.claude_dir / "plugins" / "installed_plugins.json").read_text())
    assert KEY in installed["plugins"]

    first = s.print_turn("plugin turn about marmalade @bash(echo marmalade-out)")
    assert first.returncode == 0, first.stderr
    ran = [e for e in first.hook_events() if e.get("subtype") == "hook_response"]
    assert {"UserPromptSubmit", "Stop"} <= {e["hook_event"] for e in ran}
    assert all(e["exit_code"] == 0 for e in ran), ran
    shown = s.show(first.session_id)
    assert shown and "The command printed: marmalade-out" in [m["content"] for m in shown["messages"]]

    second = s.print_turn('ask @mcp(search_memory {"query": "marmalade", "mode": "fulltext", "origin": "any"})')
    assert second.returncode == 0
    t = s.transcript(second.session_id)
    tools = [u["name"] for u in t.tool_uses()]
    assert tools[0] == "ToolSearch" and tools[1].endswith("conversation-memory__search_memory"), tools
    result = [tool_result_text(r) for r in t.tool_results()][-1]
    assert first.session_id in result, result[:500]
