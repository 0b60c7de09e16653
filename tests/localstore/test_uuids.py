"""Uuids in 16 bytes (``localstore.uuids``, journal migration 0013).

``pack`` and ``unpack`` are exact inverses over every text; only a lowercase uuid (and what follows
it) is packed; the range of a uuid's forms holds them and nothing else; a stored BLOB this version did
not write is a one-line error, not another uuid. A journal of the layout before (uuids as TEXT) is
migrated with every message and kept line the same, what restore reads the same, fewer bytes; a kill
in the middle of the migration leaves it as it was.
"""

import os
import subprocess
import sys
import uuid as uuidlib

import apsw
import pytest
from hypothesis import given
from hypothesis import strategies as st

from claude_chats import faults, paths
from claude_chats.errors import JournalError
from claude_chats.localstore import db, keptlines, uuids, writer
from claude_chats.localstore.journal import Journal
from tests.support import lines
from tests.support.journals import OLD_UUIDS, kept_line_bytes, write_corpus

MIGRATION = "0013_uuids_in_16_bytes.sql"
BEFORE = db.migration_files().index(MIGRATION)
U = "76ad9324-d5d4-446b-95d7-6d5f45aaa10e"

uuid_texts = st.uuids().map(str)
suffixes = st.sampled_from(["", "#1", "#12", "@sess-1", "@76ad9324-d5d4-446b-95d7-6d5f45aaa10e:agent-x"]) | st.text()


@given(st.one_of(st.text(), st.builds(lambda u, s: u + s, uuid_texts, suffixes)))
def test_pack_and_unpack_are_exact_inverses(value):
    stored = uuids.pack(value)
    assert uuids.unpack(stored) == value
    if type(stored) is bytes:
        assert len(stored) == uuids.SIZE + len(value[uuids.TEXT:].encode())


@given(uuid_texts, suffixes)
def test_a_lowercase_uuid_is_packed_in_16_bytes_and_its_suffix_after(u, suffix):
    stored = uuids.pack(u + suffix)
    assert stored[:16] == uuidlib.UUID(u).bytes and stored[16:] == suffix.encode()


@pytest.mark.parametrize("value", [
    U.upper(),                                  # capitals: not how Claude Code writes one, kept as it is
    U.replace("-", ""),                         # no dashes
    " " + U[1:],                                # bytes.fromhex would skip the space
    U[:9] + " " + U[10:],
    U[:8] + "+" + U[9:],
    U[:35] + "g",
    U[:35],                                     # short
    "stop:sess-1:4",
    "0000000000000000@" + U,                    # a kept line's key without a uuid of its own
])
def test_anything_but_a_lowercase_uuid_at_the_start_stays_text(value):
    assert uuids.pack(value) == value and type(uuids.pack(value)) is str


def test_a_surrogate_after_the_uuid_leaves_the_value_as_it_was():
    assert uuids.pack(U + "#\ud800") == U + "#\ud800"


@given(uuid_texts, uuid_texts, suffixes)
def test_the_range_of_a_uuid_holds_its_forms_and_never_another_uuid(u, v, suffix):
    low, high = uuids.pack(u), uuids.after(u)
    forms = [uuids.pack(u + s) for s in ("", "#1", "#2", "@sess-9")]
    assert all(low <= f < high for f in forms)
    if u != v:
        assert not low <= uuids.pack(v + suffix) < high


def test_the_journal_finds_a_lines_messages_by_the_range_and_nothing_else(journal_conn):
    """What ``keptlines`` asks SQLite: bytes compare with bytes, and a TEXT never falls in a BLOB's range."""
    conn = journal_conn
    other = U[:-1] + "f"
    conn.execute("INSERT INTO sessions (id, updated_at) VALUES ('s', 't')")
    stored = [U, U + "#1", U + "#2", U + "@s2", other, other + "#1", U.upper(), U + "x"]
    for n, value in enumerate(stored):
        conn.execute("INSERT INTO messages (uuid, session, seq, role, kind, content, created_at) "
                     "VALUES (?, ?, ?, 'user', 'text', ?, 't')", (uuids.pack(value), writer.session_number(conn, "s"), n, value))
    found = conn.execute(keptlines._TEXTS, (uuids.pack(U), "s", "t", uuids.after(U))).fetchall()
    assert sorted(text for _id, text in found) == sorted([U, U + "#1", U + "#2", U + "@s2"])
    assert conn.execute("SELECT chats_uuid(uuid) FROM messages ORDER BY seq").fetchall() == [(v,) for v in stored]


@pytest.mark.parametrize("planted", [b"short", bytes(16) + b"\xff\xfe"])
def test_a_stored_blob_this_version_did_not_write_is_a_journal_error(journal_conn, planted):
    with pytest.raises(JournalError, match="not written by claude-chats"):
        uuids.unpack(planted)
    journal_conn.execute("INSERT INTO sessions (id, updated_at) VALUES ('s', 't')")
    journal_conn.execute("INSERT INTO messages (uuid, session, seq, role, kind, content) "
                         "VALUES (?, ?, 0, 'user', 'text', 'x')", (planted, writer.session_number(journal_conn, "s")))
    with pytest.raises(JournalError, match="uuid stored in the journal"):
        journal_conn.execute("SELECT chats_uuid(uuid) FROM messages").fetchall()


def test_a_batched_statement_runs_once_per_step_over_every_id(journal_conn):
    conn = journal_conn
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
    conn.executemany("INSERT INTO t (id, v) VALUES (?, 0)", [(i,) for i in range(3, 124)])
    calls = []
    conn.create_scalar_function("bump", lambda v: calls.append(v) or v + 1, 1)
    db._run_script(conn, "UPDATE t SET v = 10 WHERE id = 3;\n-- each 50 ids of t:\n"
                         "UPDATE t SET v = bump(v) WHERE id > ?1 AND id <= ?2;\nUPDATE t SET v = v * 2 WHERE id = 4;\n")
    assert conn.execute("SELECT v, count(*) FROM t GROUP BY v ORDER BY v").fetchall() == [(1, 119), (2, 1), (11, 1)]
    assert len(calls) == 121
    for wrong in ("-- each 50 rows of t:\nSELECT 1;", "-- each 50 ids of t; DROP TABLE t:\nSELECT 1;",
                  "-- each 50 ids of t:"):
        with pytest.raises(ValueError, match="written wrong"):
            db._run_script(conn, wrong)
    assert conn.execute("SELECT count(*) FROM t").fetchall() == [(121,)]


# -- the migration ------------------------------------------------------------------------------------------

OLD_LAYOUT = OLD_UUIDS + f"""
DELETE FROM migrations WHERE name >= '{MIGRATION}';
PRAGMA user_version = {BEFORE};
"""
MESSAGES = ("SELECT m.id, chats_uuid(m.uuid), n.session_id, m.seq, chats_text(m.content) FROM messages m "
            "JOIN session_numbers n ON n.number = m.session ORDER BY m.id")
KEYS = "SELECT id, session, seq, chats_uuid(key), line, packed FROM raw_lines ORDER BY id"


def old_journal(folder, big=False):
    """The corpus imported by this code, its uuids and keys put back as TEXT (the layout before 0013);
    ``(path, messages, kept lines, what restore reads)``. ``big``: a message whose id makes it heavy."""
    path = paths.journal_path()
    with Journal.open(path) as journal:
        assert not journal.import_files(write_corpus(folder / "projects")).errors
        conn = journal.conn
        if big:   # the migration's size query reads the highest id, not a count
            conn.execute("INSERT INTO messages (id, uuid, session, seq, role, kind, content) "
                         "SELECT 20001, ?, session, 999, 'user', 'text', 'filler' FROM messages LIMIT 1",
                         (uuids.pack(str(uuidlib.uuid4())),))
        state = conn.execute(MESSAGES).fetchall(), conn.execute(KEYS).fetchall(), kept_line_bytes(conn)
        db._run_script(conn, OLD_LAYOUT)
        assert conn.execute("SELECT count(*) FROM messages WHERE typeof(uuid) = 'blob'").fetchall() == [(0,)]
    return (path, *state)


def _bytes(conn, *names):
    marks = ",".join("?" * len(names))
    return conn.execute(f"SELECT sum(payload) FROM dbstat WHERE name IN ({marks})", names).fetchall()[0][0]


def test_the_migration_keeps_every_uuid_and_kept_line_and_what_restore_reads_in_fewer_bytes(tmp_path):
    path, messages, keys, restored = old_journal(tmp_path)
    conn = apsw.Connection(path)
    indexes = ("sqlite_autoindex_messages_1", "sqlite_autoindex_raw_lines_1")
    old = [_bytes(conn, name) for name in indexes]
    conn.close()
    assert len(messages) > 20 and len(keys) > 20
    with Journal.open(path) as journal:
        conn = journal.conn
        assert db.user_version(conn) == len(db.migration_files())
        assert conn.execute(MESSAGES).fetchall() == messages
        assert conn.execute(KEYS).fetchall() == keys
        assert kept_line_bytes(conn) == restored
        assert conn.execute("SELECT typeof(uuid), count(*) FROM messages GROUP BY 1").fetchall() == \
            [("blob", len(messages))]
        new = [_bytes(conn, name) for name in indexes]
        assert all(n < o for n, o in zip(new, old)), (new, old)


def test_a_kill_in_the_middle_of_the_migration_leaves_the_journal_as_it_was(tmp_path):
    path, messages, keys, restored = old_journal(tmp_path, big=True)
    code = f"from claude_chats.localstore import db; db.connect({path!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                          env={**os.environ, faults.ENV: "mid-migration"})
    assert proc.returncode == -9 and b"0013_uuids_in_16_bytes" in proc.stderr, proc.stderr[-2000:]
    conn = apsw.Connection(path)
    assert db.user_version(conn) == BEFORE
    assert conn.execute("SELECT count(*) FROM messages WHERE typeof(uuid) = 'blob'").fetchall() == [(0,)]
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with Journal.open(path) as journal:
        assert journal.conn.execute(MESSAGES).fetchall() == messages
        assert kept_line_bytes(journal.conn) == restored


# -- a summary finds its leaf by the uuid's index (journal migration 0014) ----------------------------------

def test_a_forks_summary_finds_the_copy_of_its_leaf_in_its_own_file(tmp_path, empty_journal):
    """The leaf of a summary written in a fork's file is the fork's copy of a parent's line, stored as
    ``<uuid>@<fork>``: found by the range of the uuid's forms, not by an index of the messages' files."""
    parent, fork = "11111111-2222-4333-8444-555555555555", "66666666-7777-4888-8999-aaaaaaaaaaaa"
    leaf = str(uuidlib.uuid4())
    first = [lines.user("how do I rotate the kumquat logs", session=parent),
             lines.assistant("use logrotate with a kumquat stanza", session=parent, uid=leaf)]
    (tmp_path / "parent.jsonl").write_bytes(lines.encode(*first))
    copied = [{**line, "sessionId": fork} for line in first]
    (tmp_path / "fork.jsonl").write_bytes(lines.encode(
        *copied, {"type": "summary", "summary": "Kumquat log rotation", "leafUuid": leaf}))
    conn = empty_journal.conn
    for name in ("parent.jsonl", "fork.jsonl"):
        assert not empty_journal.import_files([str(tmp_path / name)]).errors
    assert conn.execute("SELECT count(*) FROM messages WHERE uuid = ? AND copy = 1", (uuids.pack(f"{leaf}@{fork}"),)
                        ).fetchall() == [(1,)]
    summaries = dict(conn.execute("SELECT id, summary FROM sessions"))
    assert summaries == {parent: None, fork: "Kumquat log rotation"}
    assert conn.execute("SELECT count(*) FROM pending_summaries").fetchall() == [(0,)]
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages_file'").fetchall()
