"""The indexes of what waits for Postgres (``messages_pending``, ``raw_lines_pending``) are kept only while a
Postgres is configured: a journal-only ``chats sync`` drops them (every message waits for good there, and
they took 27 bytes a message at 1M), a sync with a Postgres makes them again before it pushes, and nothing
is lost or pushed twice either way. What waits is read from the counters meanwhile (the hook's question
after it stores messages reads no message)."""

import apsw
import psycopg

from claude_chats import config
from claude_chats.localstore import db, outbox
from claude_chats.localstore.journal import Journal
from claude_chats.sync.runner import run_sync
from tests.support.fakes import HashEmbedder
from tests.support.journals import write_corpus

INDEXES = set(outbox.PENDING_INDEXES)


def indexes(conn):
    return {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")} & INDEXES


def test_a_journal_only_sync_drops_them_and_a_sync_to_postgres_makes_them_and_pushes_all(tmp_path, pg_db_url,
                                                                                        monkeypatch):
    with Journal.open() as journal:
        assert not journal.import_files(write_corpus(tmp_path / "projects")).errors
        total = journal.conn.execute("SELECT count(*) FROM messages").fetchall()[0][0]
        lines = journal.conn.execute("SELECT count(*) FROM raw_lines").fetchall()[0][0]
        assert indexes(journal.conn) == INDEXES   # a new journal has them (its migrations)
        report = run_sync(config.load({"database_url": None}), journal=journal, provider=HashEmbedder(), lock=False)
        assert report.ok, report.errors
        assert indexes(journal.conn) == set()
        assert outbox.pending_count(journal.conn) == total and db.has_pending(journal.conn)
        assert journal.pending(limit=10_000) and len(journal.pending(limit=10_000)) == total

    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    with Journal.open() as journal:
        report = run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False)
        assert report.ok, report.errors
        assert indexes(journal.conn) == INDEXES
        assert report.pushed == total and report.raw_lines == lines
        assert outbox.pending_count(journal.conn) == 0 and not db.has_pending(journal.conn)
        again = run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False)
        assert again.ok and again.pushed == 0 and again.raw_lines == 0, again
    with psycopg.connect(pg_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == total


def test_what_waits_is_read_from_the_counters_not_the_messages(tmp_path):
    with Journal.open() as journal:
        assert not journal.import_files(write_corpus(tmp_path / "projects")).errors
        outbox.keep_pending_indexes(journal.conn, False)
        conn = journal.conn
        assert db.has_pending(conn) and outbox.pending_count(conn) > 0
        journal.mark_synced([i for (i,) in conn.execute("SELECT id FROM messages")])
        assert not db.has_pending(conn) and outbox.pending_count(conn) == 0
        one = conn.execute("SELECT max(id) FROM messages").fetchall()[0][0]
        conn.execute("UPDATE messages SET synced = 0 WHERE id = ?", (one,))   # as a redaction's rewrite does
        assert db.has_pending(conn) and outbox.pending_count(conn) == 1
        # neither question reads a message: with reading the messages table denied, both still answer
        conn.authorizer = lambda op, table, *_: apsw.SQLITE_DENY if op == apsw.SQLITE_READ and table == "messages" \
            else apsw.SQLITE_OK
        assert db.has_pending(conn) and outbox.pending_count(conn) == 1
        conn.authorizer = None
