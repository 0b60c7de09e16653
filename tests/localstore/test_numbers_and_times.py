"""Journal migration 0015: a message names its conversation by its number (``session_numbers``), and
messages and kept lines keep their times as integers (``stamps``).

A journal of the layout before (written by this code, synced, its messages and kept lines put back in the
old tables by hand) is migrated: every message and kept line the same, found by the same searches, read
back by restore byte for byte, the triggers and the other tables' references to messages as they were (a
deleted message still takes its vectors and counts with it), fewer bytes. A kill -9 in the middle leaves
the journal as it was; a purge leaves no number of what it erased.
"""

import os
import subprocess
import sys

import apsw
import pytest

from claude_chats import faults, paths
from claude_chats.localstore import db, erase, stamps, texts, uuids, writer
from claude_chats.localstore.journal import Journal
from tests.support.fakes import HashEmbedder
from tests.support.journals import OLD_NUMBERS_AND_TIMES, fulltext, kept_line_bytes, sync_corpus, write_corpus

MIGRATION = "0015_session_numbers_and_times.sql"
BEFORE = db.migration_files().index(MIGRATION)
OLD_LAYOUT = OLD_NUMBERS_AND_TIMES + f"""
DELETE FROM migrations WHERE name >= '{MIGRATION}';
PRAGMA user_version = {BEFORE};
"""
MESSAGES = ("SELECT m.id, chats_uuid(m.uuid), n.session_id, m.seq, m.role, m.kind, chats_text(m.content), "
            "chats_time(m.created_at), "
            "m.message_id, m.is_sidechain, m.file_id, m.synced, m.copy FROM messages m "
            "JOIN session_numbers n ON n.number = m.session ORDER BY m.id")
OLD_MESSAGE_ROWS = MESSAGES.replace("n.session_id", "m.session_id").replace(
    "JOIN session_numbers n ON n.number = m.session ", "")
SCHEMA = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT GLOB 'messages_*' " \
         "AND name != 'messages' ORDER BY name"
SESSIONS = "SELECT * FROM sessions ORDER BY id"
LINES = "SELECT id, session, seq, chats_uuid(key), parent, line, packed, chats_time(created_at), synced FROM raw_lines"
TRIGGERS = "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' ORDER BY name"


def old_journal(folder, big=False):
    """The corpus imported and synced (vectors in the journal) by this code, its messages put back in the
    layout before 0015; ``(path, messages, kept lines, what restore reads, schema of the other tables, triggers on
    messages, search hits, sessions)``."""
    path = paths.journal_path()
    with Journal.open(path) as journal:
        assert not journal.import_files(write_corpus(folder / "projects")).errors
        sync_corpus(journal, HashEmbedder())
        conn = journal.conn
        if big:   # the migration's size query reads the highest id, not a count
            conn.execute("INSERT INTO messages (id, uuid, session, seq, role, kind, content) "
                         "SELECT 20001, 'filler', session, 999, 'user', 'text', 'filler' FROM messages LIMIT 1")
        sessions = conn.execute(SESSIONS).fetchall()
        state = (conn.execute(MESSAGES).fetchall(), conn.execute(LINES).fetchall(), kept_line_bytes(conn),
                 conn.execute(SCHEMA).fetchall(), conn.execute(TRIGGERS).fetchall(), _hits(journal), sessions)
        db._run_script(conn, OLD_LAYOUT)
        assert "session_id" in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages'").fetchall()[0][0]
        assert conn.execute(TRIGGERS).fetchall() == state[4] and conn.execute(SESSIONS).fetchall() == sessions
        assert "WITHOUT ROWID" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'sessions'").fetchall()[0][0]
        assert conn.execute("SELECT count(*) FROM messages WHERE typeof(created_at) = 'integer'").fetchall() == [(0,)]
    return (path, *state)


def _hits(journal):
    return [(h["session_id"], h["seq"]) for h in fulltext(journal, "docker")]


def _raw(path):
    """A connection that migrates nothing (what the journal holds, as it is), its SQL functions registered."""
    conn = apsw.Connection(path)
    texts.register(conn)
    uuids.register(conn)
    stamps.register(conn)
    return conn


def _bytes(conn, name):
    return conn.execute("SELECT sum(payload) FROM dbstat WHERE name = ?", (name,)).fetchall()[0][0]


def test_the_migration_keeps_every_message_trigger_and_reference_in_fewer_bytes(tmp_path):
    path, messages, lines, restored, schema, triggers, hits, sessions = old_journal(tmp_path)
    conn = _raw(path)
    old_rows = conn.execute(OLD_MESSAGE_ROWS).fetchall()
    old_index = _bytes(conn, "sqlite_autoindex_messages_2")
    conn.close()
    assert old_rows == messages and len(messages) > 20 and hits
    with Journal.open(path) as journal:
        conn = journal.conn
        assert db.user_version(conn) == len(db.migration_files())
        assert conn.execute(MESSAGES).fetchall() == messages
        assert conn.execute(LINES).fetchall() == lines and kept_line_bytes(conn) == restored
        for table in ("messages", "raw_lines"):   # every time in Claude Code's form is a number now, and only those
            assert conn.execute(f"SELECT typeof(created_at), count(*) FROM {table} WHERE created_at IS NOT NULL "
                                "GROUP BY 1").fetchall() == [("integer", conn.execute(
                                    f"SELECT count(*) FROM {table} WHERE created_at IS NOT NULL").fetchall()[0][0])]
        assert conn.execute(TRIGGERS).fetchall() == triggers     # made again on the new table, as they were
        assert conn.execute(SESSIONS).fetchall() == sessions
        assert conn.execute("SELECT sql FROM sqlite_master WHERE name = 'sessions'").fetchall()[0][0].endswith(
            "WITHOUT ROWID")
        assert conn.execute(SCHEMA).fetchall() == schema         # chunks still refer to "messages", ...
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages_before'").fetchall()
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_keys").fetchall() == [(1,)]
        assert _hits(journal) == hits
        assert _bytes(conn, "sqlite_autoindex_messages_2") < old_index
        # the references work on the new table: a message deleted takes its chunks and its counts along
        victim, chunks = conn.execute("SELECT message_id, count(*) FROM chunks GROUP BY 1 LIMIT 1").fetchall()[0]
        counted = conn.execute("SELECT sum(messages) FROM message_counts").fetchall()[0][0]
        conn.execute("DELETE FROM messages WHERE id = ?", (victim,))
        assert conn.execute("SELECT count(*) FROM chunks WHERE message_id = ?", (victim,)).fetchall() == [(0,)]
        assert conn.execute("SELECT sum(messages) FROM message_counts").fetchall()[0][0] == counted - 1
        with pytest.raises(apsw.ConstraintError):    # a number a message names cannot go
            conn.execute("DELETE FROM session_numbers WHERE number = (SELECT session FROM messages LIMIT 1)")


def test_a_kill_in_the_middle_of_the_migration_leaves_the_journal_as_it_was(tmp_path):
    path, messages, *_ = old_journal(tmp_path, big=True)
    code = f"from claude_chats.localstore import db; db.connect({path!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                          env={**os.environ, faults.ENV: "mid-migration"})
    assert proc.returncode == -9 and MIGRATION[:-4].encode() in proc.stderr, proc.stderr[-2000:]
    conn = _raw(path)
    assert db.user_version(conn) == BEFORE
    assert conn.execute(OLD_MESSAGE_ROWS).fetchall() == messages
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name GLOB 'messages_new' OR name = 'messages_before'"
                            ).fetchall()
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with Journal.open(path) as journal:
        assert journal.conn.execute(MESSAGES).fetchall() == messages


def test_a_purge_leaves_no_number_of_what_it_erased_and_the_next_turn_gets_one(tmp_path, empty_journal):
    assert not empty_journal.import_files(write_corpus(tmp_path / "projects")).errors
    conn = empty_journal.conn
    session = conn.execute("SELECT n.session_id FROM messages m JOIN session_numbers n ON n.number = m.session "
                           "LIMIT 1").fetchall()[0][0]
    number = writer.session_number(conn, session)
    erase.purge_local(conn, erase.Target.of(session=session))
    assert not conn.execute("SELECT 1 FROM session_numbers WHERE session_id = ? OR number = ?",
                            (session, number)).fetchall()
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    # the writer makes one again for a conversation it meets anew (a number is never shared)
    fresh = writer.session_number(conn, "sess-new")
    assert fresh != writer.session_number(conn, "sess-other")
    assert conn.execute("SELECT session_id FROM session_numbers WHERE number = ?", (fresh,)).fetchall() == \
        [("sess-new",)]


def test_a_swap_inside_an_open_transaction_is_refused_before_anything_is_renamed(tmp_path):
    """With a transaction open, ``PRAGMA foreign_keys = OFF`` does nothing, and a rename with them on would
    take ``chunks``' and ``final_answers``' references along to the old table."""
    path, messages, *_ = old_journal(tmp_path)
    conn = _raw(path)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("BEGIN")
    with pytest.raises(RuntimeError, match="foreign keys off"):
        db._apply(conn, BEFORE, MIGRATION)
    conn.execute("ROLLBACK")
    assert db.user_version(conn) == BEFORE and conn.execute(OLD_MESSAGE_ROWS).fetchall() == messages
    assert "REFERENCES messages(id)" in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks'").fetchall()[0][0]
    conn.close()
