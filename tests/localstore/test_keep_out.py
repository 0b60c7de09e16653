"""Issue 17: the journal's reader keeps out what the person asked it to, before anything is stored.

``#chats-skip`` in a prompt: that turn; ``#chats-off``: the rest of the session; an excluded
project: the whole transcript and its subagents (the markers and the setting: claude_chats/capture.py).
"""

import json

from claude_chats import rawlines
from claude_chats.capture import ProjectFilter
from claude_chats.localstore import keptlines, writer
from tests.support import lines
from tests.support.journals import kept_line_bytes

SESSION = "sess-1"


def _ingest(conn, path, exclude=None):
    return writer.ingest_session(conn, str(path), writer.IngestStats(exclude=exclude))


def _texts(conn, session=SESSION):
    return [t for (t,) in conn.execute("SELECT content FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = ?) ORDER BY seq", (session,))]


def _kept(conn):
    return [(key, parent, None if line is None else keptlines.read_line(conn, session, key, created, line, packed))
            for session, key, parent, line, packed, created in conn.execute(
                "SELECT n.session_id, key, parent, line, packed, chats_time(created_at) FROM raw_lines JOIN session_numbers n ON n.number = raw_lines.session ORDER BY seq")]


def _turn(prompt, answer, uid, parent=None):
    return [lines.user(prompt, uid=f"{uid}-u", parentUuid=parent),
            lines.assistant(answer, uid=f"{uid}-a", parentUuid=f"{uid}-u")]


def test_a_skipped_turn_is_kept_out_and_the_chain_is_joined_around_it(journal_conn, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(lines.encode(
        *_turn("first about figs", "figs answered", "t1"),
        *_turn("the vault code is 4242 #chats-skip", "noted the vault code 4242", "t2", parent="t1-a"),
        lines.user([{"type": "tool_result", "tool_use_id": "x", "content": "vault 4242 opened"}], uid="t2-r",
                   parentUuid="t2-a"),
        {"type": "custom-title", "customTitle": "vault 4242", "sessionId": SESSION},
        *_turn("back to figs", "more figs", "t3", parent="t2-r")))
    stats = _ingest(journal_conn, path)
    assert _texts(journal_conn) == ["first about figs", "figs answered", "back to figs", "more figs"]
    assert stats.skipped["kept out: #chats-skip"] == 4
    assert journal_conn.execute("SELECT name FROM sessions").fetchall() == [(None,)]
    restored = [json.loads(x) for x in rawlines.relink(_kept(journal_conn))]
    assert [o["uuid"] for o in restored] == ["t1-u", "t1-a", "t3-u", "t3-a"]
    assert restored[2]["parentUuid"] == "t1-a"   # across the turn kept out
    assert not any(b"4242" in line for line in kept_line_bytes(journal_conn))


def test_off_keeps_the_rest_of_the_session_out_resumes_and_subagents_too(journal_conn, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(lines.encode(*_turn("first about figs", "figs answered", "t1"),
                                  *_turn("#chats-off now the merger", "merger noted", "t2")))
    _ingest(journal_conn, path)
    with open(path, "ab") as fh:   # a later turn, and a resume: the same file
        fh.write(lines.encode(*_turn("merger terms", "the terms", "t3"),
                              {"type": "ai-title", "aiTitle": "merger", "sessionId": SESSION}))
    agent = tmp_path / SESSION / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(lines.encode(lines.user("research the merger", isSidechain=True, agentId="a1")))
    _ingest(journal_conn, path)
    assert _texts(journal_conn) == ["first about figs", "figs answered"]
    assert journal_conn.execute("SELECT count(*) FROM sessions").fetchall() == [(1,)]
    assert writer.capture_of(journal_conn, agent) is not None   # its run began after the off: kept out
    assert not writer.record_final_answer(journal_conn, SESSION, "the final merger answer", writer.IngestStats(),
                                          transcript_path=str(path))


def test_a_prompt_queued_while_claude_works_counts_too(journal_conn, tmp_path):
    """Claude Code writes a prompt typed during a turn as attachment/queued_command (its `prompt`)."""
    path = tmp_path / f"{SESSION}.jsonl"
    queued = {"type": "attachment", "uuid": "q-1", "parentUuid": "t1-a", "sessionId": SESSION,
              "attachment": {"type": "queued_command", "prompt": "the pin is 9931 #chats-off"}}
    path.write_bytes(lines.encode(*_turn("first about figs", "figs answered", "t1"), queued,
                                  lines.assistant("about the pin 9931", uid="t1-b")))
    _ingest(journal_conn, path)
    assert _texts(journal_conn) == ["first about figs", "figs answered"]
    assert not any(b"9931" in line for line in kept_line_bytes(journal_conn))


def test_the_state_set_before_the_prompt_line_is_written_holds(journal_conn, tmp_path):
    """UserPromptSubmit runs before Claude Code writes the prompt: the hook marks the file then."""
    path = tmp_path / f"{SESSION}.jsonl"
    writer.keep_out(journal_conn, str(path), "skip")
    path.write_bytes(lines.encode(lines.assistant("an answer written before its prompt line"),
                                  *_turn("private #chats-skip", "private answer", "t1"),
                                  *_turn("public", "public answer", "t2")))
    _ingest(journal_conn, path)
    assert _texts(journal_conn) == ["public", "public answer"]
    writer.keep_out(journal_conn, str(path), "off")
    writer.keep_out(journal_conn, str(path), "skip")   # never back from off
    assert writer.capture_of(journal_conn, path) == "off"


def test_an_excluded_project_stores_nothing_not_even_its_summary(journal_conn, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(lines.encode(
        {"type": "summary", "summary": "the acme merger", "leafUuid": "t1-a"},
        *[{**line, "cwd": "/clients/acme/app"} for line in _turn("acme merger terms", "acme answer", "t1")],
        {"type": "custom-title", "customTitle": "acme", "sessionId": SESSION}))
    agent = tmp_path / SESSION / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(lines.encode(lines.user("acme research", isSidechain=True, agentId="a1", cwd="/clients/acme")))
    stats = _ingest(journal_conn, path, ProjectFilter(["/clients/acme"]))
    assert stats.messages == 0 and stats.skipped == {"kept out: excluded project": 5}
    for table in ("sessions", "messages", "raw_lines", "pending_summaries"):
        assert journal_conn.execute(f"SELECT count(*) FROM {table}").fetchall() == [(0,)], table
    with open(path, "ab") as fh:   # the next turn: the file stays out, without being read
        fh.write(lines.encode(lines.user("no cwd on this line", cwd=None)))
    assert _ingest(journal_conn, path, ProjectFilter(["/clients/acme"])).messages == 0
