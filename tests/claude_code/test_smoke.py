"""Smoke: claude-chats installed into the real Claude Code 2.1.332 records a turn.

Everything is checked against the transcript Claude Code wrote, read here
with plain ``json`` (not the project's parser), and against the journal as
``chats show --json`` gives it.
"""

import json

from .harness import debug_hook_runs, tool_result_text


def _journal_texts(shown):
    return [m["content"] for m in shown["messages"]]


def test_print_turn_with_bash_is_recorded_whole(scratch):
    res = scratch.print_turn("smoke check @bash(echo smoke-output-31337)")
    assert res.returncode == 0, res.stderr
    sid = res.session_id
    assert sid

    # what Claude Code wrote, read independently
    t = scratch.transcript(sid)
    prompts, answers = t.prompts(), t.assistant_texts()
    uses, results = t.tool_uses(), t.tool_results()
    assert prompts == ["smoke check @bash(echo smoke-output-31337)"]
    assert answers == ["Running `echo smoke-output-31337`.", "The command printed: smoke-output-31337"]
    assert [(u["name"], u["input"]["command"]) for u in uses] == [("Bash", "echo smoke-output-31337")]
    assert [tool_result_text(r).strip() for r in results] == ["smoke-output-31337"]

    # every hook Claude Code ran exited 0 (stream-json hook events)
    responses = [e for e in res.hook_events() if e.get("subtype") == "hook_response"]
    assert {e["hook_event"] for e in responses} >= {"UserPromptSubmit", "Stop"}
    assert all(e.get("exit_code") == 0 for e in responses), responses
    runs = debug_hook_runs(res.debug_file)  # the same from --debug-file
    assert {event for event, command, _, _ in runs if command.endswith("record-conversation")} >= \
        {"UserPromptSubmit", "Stop"}, runs
    assert all(status == 0 for _, _, status, _ in runs), runs

    # ... and the journal holds every one of them
    shown = scratch.show(sid)
    assert shown is not None, "session not in the journal"
    texts = _journal_texts(shown)
    for text in prompts + answers:
        assert text in texts, f"{text!r} missing from the journal: {texts}"
    assert any("echo smoke-output-31337" in x for x in texts), "tool_use not stored"
    kinds = {m["kind"] for m in shown["messages"]}
    assert {"text", "tool_use", "tool_result"} <= kinds
    assert any(m["kind"] == "tool_result" and "smoke-output-31337" in m["content"] for m in shown["messages"])
    # nothing stored twice
    uuids = [m["uuid"] for m in shown["messages"]]
    assert len(uuids) == len(set(uuids))


def test_install_registers_hooks_and_mcp_server(scratch):
    settings = scratch.settings()
    for event in ("Stop", "UserPromptSubmit", "PreCompact", "SessionEnd"):
        commands = [h["command"] for g in settings["hooks"][event] for h in g["hooks"]]
        assert any(c.endswith("record-conversation") for c in commands), (event, commands)
    listed = scratch.claude("mcp", "get", "conversation-memory")
    assert listed.returncode == 0, listed.stderr
    assert "chats" in listed.stdout and "mcp" in listed.stdout


def test_uninstall_leaves_settings_as_they_were(tmp_path, claude_code, fake_api):
    from .harness import Scratch

    s = Scratch(tmp_path / "cc", claude_code, fake_api.url)
    own = {
        # what a user may already have; skipDangerousModePermissionPrompt is what
        # Claude Code itself adds on its first bypassPermissions run
        "skipDangerousModePermissionPrompt": True,
        "permissions": {"allow": ["Bash(ls:*)"]},
        "env": {"FOO": "bar"},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}]},
    }
    s.write_settings(own)
    before = s.settings_path().read_text()
    claude_json_before = json.loads((s.home / ".claude.json").read_text()).get("mcpServers", {})
    s.install()
    assert s.settings() != own
    res = s.print_turn("a turn between install and uninstall")
    assert res.returncode == 0
    s.chats("uninstall")
    assert s.settings() == own, s.settings_path().read_text()
    assert s.settings_path().read_text() == before
    after = json.loads((s.home / ".claude.json").read_text()).get("mcpServers", {})
    assert after == claude_json_before
    assert "conversation-memory" not in s.claude("mcp", "list").stdout
