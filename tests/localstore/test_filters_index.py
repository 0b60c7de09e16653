"""The index of the columns searches place and filter messages by (``messages_filters``, migration 0017).

The statements that look messages up by id only to filter and place them read the narrow index instead of
the table's wide rows (``LocalSearch._messages``): every such statement a search runs reads its ``m`` from the
index alone (SQLite's plan says so); under a role or a time beside a project the table is read after the
project kept a row, and under a role or a time alone the table only; a journal without the index answers
every search the same, and a journal from before the migration gets it (a big one not from the hook).
"""

import apsw
import pytest

from claude_chats.localstore import db
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.searcher import Searcher
from tests.support.fakes import HashEmbedder

INDEX = "messages_filters"
MIGRATION = "0017_messages_filters.sql"
# (query, mode, filters): each leg, filtered (project, role, dates) and not; a hybrid search's vector leg
# runs on a connection of its own (not traced): semantic ones run it on the journal's
SEARCHES = [
    ("flaky migration test sequence", "hybrid", {}),
    ("port 5432 already in use", "fulltext", {}),
    ("docker port already in use", "fulltext", {"project_path": "/work/alpha"}),
    ("migration rollback", "fulltext", {"role": "user", "since": "2026-01-01"}),
    ("docker port", "semantic", {"project_path": "/work/alpha"}),
    ("memory limit of the pod", "semantic", {}),
    ("flaky test", "semantic", {"role": "user", "since": "2026-01-02", "until": "2026-01-05"}),
    ("docker port", "semantic", {"project_path": "/work/alpha", "since": "2026-01-02"}),
    ("port already in use", "fulltext", {"project_path": "/work/alpha", "role": "assistant"}),
    ("migration test", "hybrid", {"project_path": "/work/beta", "until": "2026-01-05"}),
    ("why does the migration fail", "hybrid", {"since": "2026-01-02", "until": "2026-01-05"}),
]


def answers(journal, searcher=None):
    searcher = searcher or Searcher(LocalSearch(journal), None, HashEmbedder)
    found = []
    for query, mode, filters in SEARCHES:
        result = searcher.search(query, mode=mode, per_session=0, limit=20, **filters)
        found.append([(h["session_id"], h["seq"], round(h["score"], 9), h["ranks"]) for h in result["hits"]])
    return found


def test_every_statement_that_names_the_index_is_answered_from_it_alone(synced_journal):
    conn = synced_journal.conn
    assert db.has_filters_index(conn)
    columns = [row[2] for row in conn.execute(f"PRAGMA index_info({INDEX})").fetchall()]
    assert set(columns) == db.FILTERS_COLUMNS and columns[0] == "id"
    seen, plain = [], []

    def trace(_cursor, sql, bindings):
        if f"INDEXED BY {INDEX}" in sql and not sql.startswith("EXPLAIN"):
            seen.append((sql, bindings))
        elif ("m.role = ?" in sql or "m.created_at" in sql) and "JOIN messages m ON m.id" in sql:
            plain.append(sql)   # a role's or a time's filter alone: the table, not the index and the table
        return True

    conn.exec_trace = trace
    try:
        assert all(answers(synced_journal))
    finally:
        conn.exec_trace = None
    shapes = {sql for sql, _ in seen}
    assert len(shapes) >= 4   # full text ranked then joined, filtered inside, a vector leg's look-ups both ways
    for sql, bindings in seen:
        plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings or ()).fetchall())
        assert f"COVERING INDEX {INDEX}" in plan, (sql, plan)
        if "mt." in sql:   # a role or a time beside a project: the table read after the index's rows are kept
            assert "s.project_path" in sql and "m.role" not in sql and "m.created_at" not in sql, sql
            assert plan.index("SEARCH s USING") < plan.index("SEARCH mt USING INTEGER PRIMARY KEY"), plan
    assert plain   # a role's or a time's filter: read from the table, the index holds neither
    assert any("mt." in sql for sql in shapes)


def test_a_journal_without_the_index_answers_every_search_the_same(synced_journal):
    journal = synced_journal
    searcher = Searcher(LocalSearch(journal), None, HashEmbedder)
    before = answers(journal, searcher)
    other = db.connect(journal.path)   # dropped under a searcher already open, as by hand beside a server
    other.execute(f"DROP INDEX {INDEX}")
    other.close()
    assert not db.has_filters_index(journal.conn)
    assert answers(journal, searcher) == before
    assert answers(journal) == before


def _before_the_migration(path, big):
    journal = Journal.open(path)
    conn = journal.conn
    if big:   # the migration's size query reads the highest id, not a count
        conn.execute("INSERT INTO messages (id, uuid, session, seq, role, kind, content) "
                     "SELECT 20001, 'filler', session, 999, 'user', 'text', 'filler' FROM messages LIMIT 1")
    conn.execute(f"DROP INDEX {INDEX}; DELETE FROM migrations WHERE name = '{MIGRATION}'; "
                 f"PRAGMA user_version = {db.migration_files().index(MIGRATION)}")
    journal.close()


@pytest.mark.parametrize("big", [False, True], ids=["small", "big"])
def test_a_journal_from_before_gets_the_index_and_the_hook_leaves_a_big_ones_to_others(synced_journal, big):
    path = synced_journal.path
    before = answers(synced_journal)
    synced_journal.close()
    _before_the_migration(path, big)
    if big:
        with pytest.raises(db.MigrationDeferred):
            db.connect(path, defer_heavy=True)
        conn = apsw.Connection(str(path))
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (INDEX,)).fetchall()
        conn.close()
    with Journal.open(path) as journal:
        assert db.user_version(journal.conn) == len(db.migration_files())
        assert db.has_filters_index(journal.conn)
        if not big:
            assert answers(journal) == before
