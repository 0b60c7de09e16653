"""Journal migration 0012: the kept lines name their conversation by a number (``session_numbers``).

A journal of the layout before (its kept lines written by this code, then put back in the old table
by hand) is migrated: every row the same, ``chats restore``'s reading the same, fewer bytes. The
migration is heavy on a big journal (``db.HEAVY``): the hook, a fresh process, hands its turn to a
process in the background and returns without waiting, and the turn is recorded once the migration
is done; a kill -9 in the middle of it leaves the journal as it was; a command arriving meanwhile
waits for it instead of failing; a purge leaves no number of the session it erased.
"""

import fcntl
import json
import os
import subprocess
import sys
import time

import apsw
import pytest

from claude_chats import faults, paths
from claude_chats.errors import JournalError
from claude_chats.localstore import db, keptlines, outbox, writer
from claude_chats.localstore.journal import Journal
from tests.support import lines
from tests.support.cli import chats
from tests.support.hooks import hook_log, run_hook
from tests.support.journals import OLD_KEPT_LINES, write_corpus

MIGRATION = "0012_kept_lines_session_numbers.sql"
BEFORE = db.migration_files().index(MIGRATION)   # the user_version of a journal not migrated yet
OLD_LAYOUT = OLD_KEPT_LINES + f"""
DELETE FROM migrations WHERE name >= '{MIGRATION}';
PRAGMA user_version = {BEFORE};
"""
ROWS = ("SELECT r.id, n.session_id, r.seq, chats_uuid(r.key), r.parent, r.line, r.packed, chats_time(r.created_at), r.synced "
        "FROM raw_lines r JOIN session_numbers n ON n.number = r.session ORDER BY r.id")
OLD_ROWS = "SELECT id, session_id, seq, key, parent, line, packed, created_at, synced FROM raw_lines ORDER BY id"


def old_journal(folder, big=False):
    """The journal (where the hook and the commands find it) of the corpus, its kept lines in the layout before
    0012 (some as read, some referring to their messages, some synced); ``big``: with a row whose id says it
    is big enough for the hook to defer the migration."""
    path = paths.journal_path()
    with Journal.open(path) as journal:
        assert not journal.import_files(write_corpus(folder / "projects")).errors
        conn = journal.conn
        conn.execute("UPDATE raw_lines SET packed = 0, line = CAST('{\"as\": \"read\"}' AS BLOB) WHERE id % 5 = 0")
        outbox.mark_raw_lines_pushed(conn, [i for (i,) in conn.execute("SELECT id FROM raw_lines WHERE id % 3 = 0")])
        db._run_script(conn, OLD_LAYOUT)
        if big:   # the migration's size query reads the highest id, not a count
            conn.execute("INSERT INTO raw_lines (id, session_id, seq, key, line, packed) "
                         "VALUES (20001, 'sess-filler', 0, 'k', NULL, 1)")
    return path


def _reader(path):
    """A read-only connection that waits for a writer's lock as the package's own do (``db.BUSY_TIMEOUT_MS``):
    the migration in the background holds the journal's write lock while it converts it."""
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(db.BUSY_TIMEOUT_MS)
    return conn


def version(path):
    conn = _reader(path)
    try:
        return db.user_version(conn)
    finally:
        conn.close()


def table_bytes(conn, *names):
    marks = ",".join("?" * len(names))
    return conn.execute(f"SELECT sum(payload) FROM dbstat WHERE name IN ({marks})", names).fetchall()[0][0]


def test_the_migration_keeps_every_kept_line_and_what_restore_reads_in_fewer_bytes(tmp_path):
    path = old_journal(tmp_path)
    conn = apsw.Connection(path)
    before = conn.execute(OLD_ROWS).fetchall()
    old_bytes = table_bytes(conn, "raw_lines", "sqlite_autoindex_raw_lines_1", "sqlite_autoindex_raw_lines_2")
    conn.close()
    sessions = sorted({row[1] for row in before})
    assert len(before) > 40 and {row[6] for row in before} >= {0, 2} and {row[8] for row in before} == {0, 1}
    assert any(":agent-" in s for s in sessions)   # a subagent's conversation: restore reads it with its parent

    with Journal.open(path) as journal:   # read-write: migrated
        assert db.user_version(journal.conn) == len(db.migration_files())
        assert journal.conn.execute(ROWS).fetchall() == before
        numbers = journal.conn.execute("SELECT session_id FROM session_numbers ORDER BY session_id").fetchall()
        assert [s for (s,) in numbers] == sessions
        new_bytes = table_bytes(journal.conn, "raw_lines", "sqlite_autoindex_raw_lines_1",
                                "sqlite_autoindex_raw_lines_2")
        # the id was in the row and in both indexes' entries; a number is a byte or two in each
        assert new_bytes < old_bytes - sum(len(row[1]) for row in before), (new_bytes, old_bytes)
        indexes = {n for (n,) in journal.conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'raw_lines'")}
        assert {"raw_lines_pending", "raw_lines_unpacked"} <= indexes
        # what restore reads: each conversation's lines in order, a subagent's with its parent's, every
        # line's bytes as the rows read one by one give them
        for s in (s for s in sessions if ":agent-" not in s):
            rows = sorted((r for r in before if r[1] == s or r[1].startswith(s + ":agent-")), key=lambda r: (r[1], r[2]))
            expected = {}
            for _id, conversation, _seq, key, parent, line, packed, created, _synced in rows:
                raw = None if line is None else keptlines.read_line(journal.conn, conversation, key, created, line, packed)
                expected.setdefault(conversation, []).append((key, parent, raw))
            assert journal.kept_lines(s) == expected
        # new lines go on with the numbers: a session's next seq after its last
        first = sessions[0]
        top = max(r[2] for r in before if r[1] == first)
        writer._keep_lines(journal.conn, [(first, "new-key", None, b'{"type": "user"}', None)], None)
        assert journal.conn.execute(ROWS).fetchall()[-1][1:4] == (first, top + 1, "new-key")


def _payload(folder, session="sess-later"):
    transcript = folder / "projects" / f"{session}.jsonl"
    transcript.write_bytes(lines.encode(lines.user("a turn recorded after the migration", session=session),
                                        lines.assistant("and its answer", session=session)))
    return {"session_id": session, "transcript_path": str(transcript), "hook_event_name": "Stop", "cwd": "/work/x"}


def _recorded(path, session):
    conn = _reader(path)
    try:
        if db.user_version(conn) <= db.migration_files().index("0015_session_numbers_and_times.sql"):   # not applied yet
            return conn.execute("SELECT count(*) FROM messages WHERE session_id = ?", (session,)).fetchall()[0][0]
        return conn.execute(f"SELECT count(*) FROM messages WHERE session = {db.NUMBER}", (session,)).fetchall()[0][0]
    finally:
        conn.close()


def _hold(path):
    fd = os.open(path + ".migrating", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_the_hook_hands_a_big_journals_migration_to_the_background_and_the_turn_is_recorded(tmp_path):
    path = old_journal(tmp_path, big=True)
    held = _hold(path)
    try:
        run_hook(_payload(tmp_path))   # a fresh process: exits 0, prints nothing, while the lock is held
        assert version(path) == BEFORE and _recorded(path, "sess-later") == 0
    finally:
        os.close(held)   # the process in the background may go on now
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (_recorded(path, "sess-later") and version(path) > BEFORE):
        time.sleep(0.05)
    assert version(path) == len(db.migration_files())
    assert _recorded(path, "sess-later") == 2
    assert hook_log() == []
    with Journal.open(path) as journal:
        assert [line for _c, lines_ in journal.kept_lines("sess-later").items() for line in lines_]


def test_the_hook_migrates_a_small_journal_itself(tmp_path):
    path = old_journal(tmp_path)
    run_hook(_payload(tmp_path))
    assert version(path) == len(db.migration_files()) and _recorded(path, "sess-later") == 2


def killed_at(point, tmp_path):
    """A big journal of the layout before, a process migrating it killed (SIGKILL) at fault ``point``;
    ``(its path, its kept lines before)``."""
    path = old_journal(tmp_path, big=True)
    conn = apsw.Connection(path)
    before = conn.execute(OLD_ROWS).fetchall()
    conn.close()
    code = f"from claude_chats.localstore import db; db.connect({path!r})"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120,
                          env={**os.environ, faults.ENV: point})
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert b"migrating the journal" in proc.stderr
    return path, before


def test_a_kill_in_the_middle_of_the_migration_leaves_the_journal_as_it_was(tmp_path):
    path, before = killed_at("mid-migration", tmp_path)
    assert version(path) == BEFORE
    conn = apsw.Connection(path)
    assert conn.execute(OLD_ROWS).fetchall() == before
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    with Journal.open(path) as journal:
        assert journal.conn.execute(ROWS).fetchall() == before


def test_a_command_waits_for_a_migration_under_way_instead_of_failing(tmp_path):
    path = old_journal(tmp_path, big=True)
    held = _hold(path)
    code = (f"from claude_chats.localstore import db; c = db.connect({path!r}); "
            "print(c.execute('SELECT count(*) FROM session_numbers').fetchall()[0][0])")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said = proc.stderr.readline()   # written before it waits on the lock
        assert b"waiting for another process migrating the journal" in said, said
        time.sleep(1.0)
        assert proc.poll() is None and version(path) == BEFORE   # still waiting, nothing migrated under the lock
    finally:
        os.close(held)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert int(out) > 3 and version(path) == len(db.migration_files())


@pytest.mark.parametrize("session", ["s-migrate", "s-async"])
def test_a_purge_leaves_no_number_of_the_session_it_erased(tmp_path, session):
    path = old_journal(tmp_path)
    result = chats("purge", "--session", session, "--yes", "--json")
    assert result.exit_code == 0 and json.loads(result.output)["local"]["sessions"] >= 1, result.output
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    left = [s for (s,) in conn.execute("SELECT session_id FROM session_numbers")]
    assert not [s for s in left if s == session or s.startswith(session + ":agent-")], left
    assert left and conn.execute("SELECT count(*) FROM raw_lines").fetchall()[0][0] > 0
    assert conn.execute("SELECT count(*) FROM raw_lines WHERE session NOT IN "
                        "(SELECT number FROM session_numbers)").fetchall() == [(0,)]
    conn.close()


def test_a_kill_after_the_commit_leaves_the_old_table_and_the_next_sync_drops_it(tmp_path):
    path, before = killed_at("before-drop", tmp_path)
    tables = "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'raw_lines%' ORDER BY name"
    # read only: opened to write, the journal would run the migrations after 0012, which drop it too
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    try:
        assert version(path) == BEFORE + 1
        assert conn.execute(tables).fetchall() == [("raw_lines",), ("raw_lines_before",)]
    finally:
        conn.close()
    chats("sync", "--json")   # journal-only, no model: whatever it says of embedding, it tidies the journal
    with Journal.open(path) as journal:
        assert journal.conn.execute(tables).fetchall() == [("raw_lines",)]
        assert journal.conn.execute(ROWS).fetchall() == before


def test_a_link_planted_as_the_migration_lock_is_refused_not_followed(tmp_path):
    path = old_journal(tmp_path, big=True)
    target = tmp_path / "elsewhere"
    os.symlink(target, path + ".migrating")
    with pytest.raises(JournalError, match="migration lock"):
        db.connect(path)
    result = chats("sessions")
    assert result.exit_code != 0 and "migration lock" in result.output
    assert len([line for line in result.output.splitlines() if line.strip()]) == 1, result.output
    assert not target.exists() and version(path) == BEFORE


def test_a_migration_stuck_in_another_process_is_waited_for_a_bounded_time(tmp_path, monkeypatch):
    path = old_journal(tmp_path, big=True)
    held = _hold(path)
    monkeypatch.setattr(db, "HEAVY_WAIT", 1)
    try:
        started = time.monotonic()
        with pytest.raises(JournalError, match="another process has been migrating the journal"):
            db.connect(path)
        assert 1 <= time.monotonic() - started < 30
    finally:
        os.close(held)
    assert version(path) == BEFORE
    db.connect(path).close()   # the lock let go: migrated
    assert version(path) == len(db.migration_files())
