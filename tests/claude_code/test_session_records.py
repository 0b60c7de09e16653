"""Session metadata records of Claude Code 2.1.332 and what the journal makes of them
(issue 12 defects 5, 6 and 7): ai-title, subagent meta.json, pr-link, SubagentStop,
/compact, /rename.

Each test first checks, from the transcript alone, that Claude Code wrote the
record (so a failure below is the journal's), then the journal.
"""

import json
import os
import subprocess
import time

import pytest

from .fake_api import AI_TITLE, AWAY_SUMMARY, COMPACT_SUMMARY
from .harness import PROJECT_ROOT, chats_bin, eventually, read_jsonl


def _session_row(scratch, session_id):
    for row in scratch.sessions():
        if row["session_id"] == session_id:
            return row
    raise AssertionError(f"{session_id} not in `chats sessions`")


# -- ai-title -------------------------------------------------------------------------


def _titled_session(probed):
    # Title generation is "nonessential traffic": only with that switch off, and only interactive.
    with probed.interactive(CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=None) as ui:
        ui.wait_idle()
        run = ui.turn("tell me about the lighthouse keeper's logbook")
        sid = run["payload"]["session_id"]
        eventually(lambda: probed.transcript(sid).of_type("ai-title"), what="an ai-title record")
        ui.turn("and the foghorn schedule")
    return sid


@pytest.fixture(scope="module")
def titled(new_scratch):
    s = new_scratch(probe=True)
    return s, _titled_session(s)


def test_interactive_session_gets_an_ai_title(titled):
    probed, sid = titled
    titles = [r["aiTitle"] for r in probed.transcript(sid).of_type("ai-title")]
    assert titles and set(titles) == {AI_TITLE}
    title_requests = probed.api.messages_requests("title")
    assert title_requests, probed.api.paths()
    req = title_requests[0].body
    assert req["output_config"]["format"]["schema"]["required"] == ["title"]
    assert "lighthouse keeper" in json.dumps(req["messages"])


def test_ai_title_names_the_session(titled):
    probed, sid = titled
    assert _session_row(probed, sid)["name"] == AI_TITLE


# -- subagents ------------------------------------------------------------------------


def _foreground_subagent(scratch):
    res = scratch.print_turn("delegate @agent(count the apples in the basket)")
    assert res.returncode == 0, res.stderr
    sid = res.session_id
    (agent,) = scratch.subagent_transcripts(sid)
    meta = json.loads(agent.path.with_name(agent.path.stem + ".meta.json").read_text())
    assert meta["agentType"] == "general-purpose" and meta["description"] == "scripted subagent"
    assert agent.prompts() == ["count the apples in the basket"]
    assert all(r.get("isSidechain") for r in agent.of_type("user") + agent.of_type("assistant"))
    return sid, agent, meta


@pytest.fixture(scope="module")
def foreground(new_scratch):
    s = new_scratch()
    return (s, *_foreground_subagent(s))


def test_subagent_transcript_is_recorded_as_its_own_conversation(foreground):
    scratch, sid, agent, _ = foreground
    agent_id = agent.path.stem.removeprefix("agent-")
    rows = [r for r in scratch.sessions() if r["agent_id"] == agent_id]
    assert len(rows) == 1 and rows[0]["parent_session_id"] == sid
    shown = scratch.show(rows[0]["session_id"])
    assert "Scripted reply to: count the apples in the basket" in [m["content"] for m in shown["messages"]]


def test_subagent_is_named_from_its_meta_json(foreground):
    scratch, sid, agent, meta = foreground
    agent_id = agent.path.stem.removeprefix("agent-")
    (row,) = [r for r in scratch.sessions() if r["agent_id"] == agent_id]
    assert row["name"] and meta["description"] in row["name"], row


def _background_subagent(probed):
    res = probed.print_turn("delegate in the background @bgagent(list the pears in the crate)")
    assert res.returncode == 0, res.stderr
    sid = res.session_id
    stops = probed.probe_runs("SubagentStop")
    assert len(stops) == 1
    payload = stops[0]["payload"]
    path = payload["agent_transcript_path"]
    assert path.endswith(f"{sid}/subagents/agent-{payload['agent_id']}.jsonl")
    assert payload["agent_type"] == "general-purpose"
    assert payload["last_assistant_message"] == "Scripted reply to: list the pears in the crate"
    meta = json.loads((probed.transcript_path(sid).with_suffix("") / "subagents" /
                       f"agent-{payload['agent_id']}.meta.json").read_text())
    assert meta["requestShape"] == "background"
    return sid, stops[0]


@pytest.fixture(scope="module")
def background(new_scratch):
    s = new_scratch(probe=True)
    return (s, *_background_subagent(s))


def test_background_subagent_fires_subagent_stop(background):
    probed, sid, run = background
    # the notification of its end comes back as a prompt of its own
    prompts = [r["payload"]["prompt"] for r in probed.probe_runs("UserPromptSubmit")]
    assert any("<task-notification>" in p for p in prompts)
    assert run["agent_transcript"]["exists"]


def test_subagent_stop_hook_records_the_background_subagent(background):
    probed = background[0]
    commands = [h["command"] for g in probed.settings().get("hooks", {}).get("SubagentStop", [])
                for h in g["hooks"]]
    assert any("record-conversation" in c for c in commands), commands
    probed, sid, run = background
    assert "snapshot" in run, "no hook of ours ran at SubagentStop"
    agent_id = run["payload"]["agent_id"]
    snapshot_rows = probed.show_at(run["snapshot"], f"{sid}:agent-{agent_id}")
    assert snapshot_rows and run["payload"]["last_assistant_message"] in [m["content"] for m in snapshot_rows["messages"]]


# -- pr-link ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pr_session(new_scratch):
    s = new_scratch()
    return s, _pr_session(s)


def test_pr_created_in_a_session_writes_pr_link(pr_session):
    scratch, sid = pr_session
    (link,) = {json.dumps({k: r[k] for k in ("prNumber", "prUrl", "prRepository")})
               for r in scratch.transcript(sid).of_type("pr-link")}
    assert json.loads(link) == {"prNumber": 42, "prUrl": "https://github.com/example/widgets/pull/42",
                                "prRepository": "example/widgets"}


def _pr_session(scratch):
    gh = scratch.bin / "gh"  # what `gh pr create` prints; Claude Code links the session to that PR
    gh.write_text('#!/bin/sh\necho "https://github.com/example/widgets/pull/42"\n')
    gh.chmod(0o755)
    res = scratch.print_turn("open the pull request @bash(gh pr create --title Widgets --body Done)")
    assert res.returncode == 0, res.stderr
    return res.session_id


def test_pr_link_is_recorded(pr_session):
    """The PR a session opened is a searchable message of it: "which session opened PR 42?" finds it."""
    scratch, sid = pr_session
    links = [m["content"] for m in scratch.show(sid)["messages"] if m["kind"] == "link"]
    assert links == ["pull request #42 in example/widgets: https://github.com/example/widgets/pull/42"]
    hits = scratch.search("pull request 42", "--kind", "link")["hits"]
    assert [h["session_id"] for h in hits] == [sid]


# -- /compact and /rename (interactive) ----------------------------------------------------


def test_compact_is_stored_and_flagged(probed):
    with probed.interactive() as ui:
        ui.wait_idle()
        run = ui.turn("first turn about the clockwork orrery")
        sid = run["payload"]["session_id"]
        ui.turn("second turn @bash(echo orrery-gears)")
        ui.type("/compact keep the gears")
        eventually(lambda: probed.probe_runs("PostCompact"), what="PostCompact")
        ui.wait_for("Compacted", what="the compaction notice")
        compacted_at = time.time()
        ui.turn("after the compaction")
    # what Claude Code sent next: the summary stands in for the earlier turns
    (after,) = probed.api.main_after(compacted_at)
    assert COMPACT_SUMMARY in after.text() and "after the compaction" in after.text()
    t = probed.transcript(sid)
    (boundary,) = t.of_type("system", "compact_boundary")
    assert boundary["parentUuid"] is None and boundary["compactMetadata"]["trigger"] == "manual"
    (summary,) = [r for r in t.of_type("user") if r.get("isCompactSummary")]
    assert COMPACT_SUMMARY in json.dumps(summary["message"])
    pre = probed.probe_runs("PreCompact")[0]["payload"]
    assert pre["trigger"] == "manual" and pre["custom_instructions"] == "keep the gears"
    post = probed.probe_runs("PostCompact")[0]["payload"]
    assert COMPACT_SUMMARY in post["compact_summary"]
    assert [r["payload"]["source"] for r in probed.probe_runs("SessionStart")] == ["startup", "compact"]
    assert probed.api.messages_requests("compact")
    shown = probed.show(sid)["messages"]
    kinds = {m["kind"] for m in shown}
    assert {"compact_boundary", "compact_summary"} <= kinds, kinds
    (stored,) = [m for m in shown if m["kind"] == "compact_summary"]
    assert COMPACT_SUMMARY in stored["content"]
    # the turns before and after the compaction are all there
    texts = [m["content"] for m in shown]
    for text in ("first turn about the clockwork orrery", "The command printed: orrery-gears",
                 "Scripted reply to: after the compaction"):
        assert text in texts


def test_rename_names_the_session(probed):
    with probed.interactive() as ui:
        ui.wait_idle()
        run = ui.turn("a turn before the rename")
        sid = run["payload"]["session_id"]
        ui.type("/rename orrery-workshop")
        ui.wait_for("Session renamed to: orrery-workshop", what="the rename notice")
        ui.turn("a turn after the rename")
    t = probed.transcript(sid)
    assert {r["customTitle"] for r in t.of_type("custom-title")} == {"orrery-workshop"}
    assert {r["agentName"] for r in t.of_type("agent-name")} == {"orrery-workshop"}
    assert [r["commandRun"] for r in t.of_type("system", "local_command") if r.get("commandRun")] == \
        [{"command": "rename", "args": "orrery-workshop"}]
    assert _session_row(probed, sid)["name"] == "orrery-workshop"


# -- recaps: /recap (system/local_command) and away_summary ---------------------------------


def _recap_session(probed):
    with probed.interactive() as ui:
        ui.wait_idle()
        run = ui.turn("plan the greenhouse irrigation")
        ui.type("/recap")
        ui.wait_for(AWAY_SUMMARY, what="the recap")
        eventually(lambda: AWAY_SUMMARY in probed.transcript_path(run["payload"]["session_id"]).read_text(),
                   what="the recap in the transcript")
        ui.turn("a turn after the recap")
    return run["payload"]["session_id"]


@pytest.fixture(scope="module")
def recapped(new_scratch):
    s = new_scratch(probe=True)
    return s, _recap_session(s)


def test_recap_command_writes_its_recap_as_local_command(recapped):
    probed, sid = recapped
    t = probed.transcript(sid)
    outputs = [r["content"] for r in t.of_type("system", "local_command") if r.get("commandRun", {}).get("command") == "recap"]
    assert outputs == [f"<local-command-stdout>{AWAY_SUMMARY}</local-command-stdout>"]
    assert probed.api.messages_requests("away-summary")
    assert not t.of_type("system", "away_summary")  # /recap is not the away-summary record


def test_recap_is_recorded(recapped):
    probed, sid = recapped
    assert any(AWAY_SUMMARY in m["content"] for m in probed.show(sid)["messages"])


def test_away_summary_is_recorded(tmp_path):
    """A real away_summary (v2.1.114, the same record as 2.1.332 writes: {type: system, subtype:
    away_summary, content, uuid, timestamp, isMeta: false}) from the shared corpus: 2.1.332 writes
    one only after the terminal lost focus for 3+ minutes, which a headless tmux does not deliver."""
    corpus = PROJECT_ROOT.parent / "shared" / "corpus" / "transcripts"
    path = corpus / "claude-code-log" / "real_projects" / "-experiments-worktrees" / \
        "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not present (../shared/corpus)")
    recaps = [r["content"] for r in read_jsonl(path) if r.get("subtype") == "away_summary"]
    assert len(recaps) == 2
    env = {**os.environ, "CLAUDE_CHATS_HOME": str(tmp_path / "home")}
    chats = str(chats_bin())
    subprocess.run([chats, "import", str(path)], check=True, capture_output=True, env=env)
    shown = json.loads(subprocess.run([chats, "show", path.stem, "--json"], check=True, capture_output=True,
                                      text=True, env=env).stdout)
    stored = [m["content"] for m in shown["messages"]]
    for recap in recaps:
        assert any(recap in s for s in stored), recap
