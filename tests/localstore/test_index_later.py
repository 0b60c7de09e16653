"""The writer indexes the messages it inserts in one statement (``writer._insert_messages`` under
``texts.indexing_later``), not one trigger's statement a message: every message is indexed once, FTS5
writes a segment a transaction rather than one a message, a failed insert leaves the trigger indexing
again, and the trigger a seal writes again leaves the writer's messages alone too (issue 22)."""

import uuid as uuidlib

import apsw
import pytest

from claude_chats.localstore import db, ftsparts, writer
from claude_chats.localstore.journal import Journal
from tests.support.stand_ins import chats, line, write


def varint(blob, at):
    """SQLite's varint at ``at``: (value, the offset after it)."""
    value = 0
    for k in range(9):
        byte = blob[at]
        at += 1
        if k == 8:
            return (value << 8) | byte, at
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at
    raise AssertionError("unreachable")


def segments_written(conn, name=ftsparts.HEAD):
    """The count of segments FTS5 has written to ``name`` since it was made (its structure record's
    ``nWriteCounter``: a flush of what it held, a merge's output)."""
    blob = conn.execute(f"SELECT block FROM {name}_data WHERE id = 10").fetchall()[0][0]
    at = 8 if blob[4:8] == b"\xff\x00\x00\x01" else 4   # (a structure record of the second version)
    _levels, at = varint(blob, at)
    _segments, at = varint(blob, at)
    return varint(blob, at)[0]


def a_session(tmp_path, n, word):
    """A session of ``n`` lines, each holding ``word`` and its own number, imported with `chats import`."""
    session = f"sess-{uuidlib.uuid4().hex[:8]}"
    rows = [line("user" if i % 2 == 0 else "assistant", f"{word} item{i} deploy pipeline", session, i)
            for i in range(n)]
    write(tmp_path / "claude" / "projects" / "-work-proj" / f"{session}.jsonl", rows)
    return session


def matches(conn, expression):
    return {r for (r,) in conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?", (expression,))}


def check_index(conn):
    """Every message indexed once, as `chats doctor --full` checks it: the index's tables count as many rows
    as the messages, each message is in one of them, and FTS5's own check passes (against the table when
    the head is the only table)."""
    names = ftsparts.tables(conn)
    assert sum(ftsparts.rows(conn, n) for n in names) == conn.execute("SELECT count(*) FROM messages").fetchall()[0][0]
    assert ftsparts.coverage(conn) == (0, 0, 0)
    for name in names:
        conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', {int(len(names) == 1)})")


def test_an_import_indexes_every_message_once_in_a_few_segments(tmp_path):
    a_session(tmp_path, 300, "zqalpha")
    chats("import")
    with Journal.open() as journal:
        conn = journal.conn
        ids = {r for (r,) in conn.execute("SELECT id FROM messages")}
        assert len(ids) == 300
        assert matches(conn, "zqalpha") == ids                  # every message, found by its word
        assert len(matches(conn, "item17")) == 1
        check_index(conn)
        # one transaction of 300 messages: a handful of segments written, not one a message (the trigger's)
        assert segments_written(conn) < 10


def test_messages_inserted_by_any_other_statement_are_still_indexed_by_the_trigger(tmp_path):
    a_session(tmp_path, 4, "zqbeta")
    chats("import")
    with Journal.open() as journal:
        conn = journal.conn
        session = conn.execute("SELECT id FROM sessions").fetchall()[0][0]
        conn.execute(f"INSERT INTO messages (uuid, session, seq, role, kind, content) "
                     f"VALUES ('by-hand', {db.NUMBER}, 99, 'user', 'text', 'zqgamma typed by hand')", (session,))
        assert len(matches(conn, "zqgamma")) == 1
        check_index(conn)


def test_an_insert_that_fails_leaves_the_trigger_indexing_on_that_connection(tmp_path):
    from claude_chats.localstore import writer

    a_session(tmp_path, 4, "zqdelta")
    chats("import")
    with Journal.open() as journal:
        conn = journal.conn
        session, taken = conn.execute("SELECT session, uuid FROM messages LIMIT 1").fetchall()[0]
        row = (taken, session, 50, "user", "text", "zqepsilon", None, None, 0, None, 0)
        with pytest.raises(apsw.ConstraintError):   # the uuid is taken: the whole insert fails
            writer._insert_messages(conn, [row])
        assert not matches(conn, "zqepsilon")
        conn.execute("INSERT INTO messages (uuid, session, seq, role, kind, content) "
                     "VALUES ('after-the-failure', ?, 51, 'user', 'text', 'zqzeta')", (session,))
        assert len(matches(conn, "zqzeta")) == 1       # the trigger indexes again here
        check_index(conn)


def test_the_trigger_a_seal_writes_again_leaves_the_writers_messages_to_it(tmp_path):
    a_session(tmp_path, 40, "zqeta")
    chats("import")
    with Journal.open() as journal:
        assert ftsparts.seal(journal.conn, at_least=1) is not None   # writes the index's triggers again
    a_session(tmp_path, 30, "zqtheta")
    chats("import")
    with Journal.open() as journal:
        conn = journal.conn
        assert len(matches(conn, "zqtheta")) == 30
        assert conn.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'zqtheta'").fetchall() \
            == [(30,)]
        check_index(conn)                               # indexed once: twice would fail FTS5's check
