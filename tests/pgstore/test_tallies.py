"""The counts behind a search's coverage note, read from the tallies of sql/0007_tallies.sql rather
than counted (issue 22: 1-2 s at a million messages, in every `chats search` process), stay exactly
what counting says (and so does bm25's message count): after pushes, a re-push, several chunks per message, forks' copies, kinds the
space skips, purges (vectors cascading), folds, concurrent pushes, and on a database upgraded from
before the migration."""

import threading

import numpy as np
import psycopg

from claude_chats.localstore.erase import Target
from claude_chats.models import Space
from claude_chats.pgstore import connect as pg
from claude_chats.pgstore import migrations
from claude_chats.pgstore.purge import delete_postgres
from claude_chats.pgstore.search import PgSearch
from claude_chats.pgstore.store import PgStore, vector_table
from claude_chats.records import Batch, Conversation, Message, VectorRow

T0 = "2026-01-01T00:00:00Z"
SPACE = Space("test", "tally", 8, {})


def batch(sid, n, start=0, embedded=lambda i: i % 3 != 0, kinds=("text", "tool_result"), copies=()):
    conversation = Conversation(sid, "/work/proj", "main", "name", T0, T0, None, None, "m1", T0)
    messages = [Message(f"{sid}-{i}", sid, i, "user", kinds[i % len(kinds)], f"message {i} of {sid}", T0,
                        i in copies) for i in range(start, start + n)]
    rng = np.random.default_rng(start)
    chunks = [VectorRow(m.message_uuid, c, 0, 5, rng.random(8, dtype=np.float32))
              for i, m in zip(range(start, start + n), messages) if embedded(i) for c in range(1 + i % 2)]
    return Batch([conversation], messages, chunks, SPACE)


def counted(conn, space_id, skipped):
    """What coverage() counted before the tallies: the exact answer."""
    embedded = conn.execute(f"SELECT count(DISTINCT message_id) FROM {vector_table(space_id)}").fetchone()[0]
    total = conn.execute("SELECT count(*) FROM messages WHERE NOT is_copy AND kind <> ALL(%s)",
                         (list(skipped),)).fetchone()[0]
    return embedded, total


def coverage(url, space_id, skipped):
    """A fresh searcher's coverage (no cache), and whether it came from the tallies."""
    conn = pg.connect(url)
    try:
        search = PgSearch(conn, url)
        answer = search.coverage(space_id, skipped)
        # bm25's N, from the same tallies: every message, copies and every kind included
        assert search._text_stats()[0] == max(1, conn.execute("SELECT count(*) FROM messages").fetchone()[0])
        return answer, search._tallies({"space": space_id, "skipped": list(skipped)})[0]
    finally:
        conn.close()


def check(store, url, space_id):
    for skipped in ((), ("tool_result",)):
        answer, tallied = coverage(url, space_id, skipped)
        assert tallied
        assert answer == counted(store.conn, space_id, skipped)


def test_tallies_follow_pushes_repushes_purges_and_folds(pg_db_url):
    with PgStore.open(pg_db_url) as store:
        space_id = store.ensure_space(SPACE)
        store.push(batch("s1", 30, copies={4, 5}))
        store.push(batch("s2", 20))
        check(store, pg_db_url, space_id)
        store.push(batch("s1", 30, copies={4, 5}))       # a re-push inserts nothing, counts nothing
        store.push(batch("s2", 10, start=20, embedded=lambda i: True))
        check(store, pg_db_url, space_id)
        delete_postgres(store.conn, Target.of(session="s1"))   # vectors go by cascade
        check(store, pg_db_url, space_id)
        store.conn.execute("DELETE FROM messages WHERE message_uuid = 's2-3'")
        store.conn.execute(f"DELETE FROM {vector_table(space_id)} WHERE chunk_index = 1")   # a message keeps chunk 0
        store.conn.execute("UPDATE messages SET is_copy = true WHERE message_uuid = 's2-5'")
        check(store, pg_db_url, space_id)
        store.fold_tallies()
        check(store, pg_db_url, space_id)
        rows = store.conn.execute("SELECT (SELECT count(*) FROM message_tally), "
                                  "(SELECT count(*) FROM vector_tally)").fetchone()
        assert rows == (4, 1)   # (text, tool_result) x (copy or not); one space
        store.push(batch("s3", 5))
        check(store, pg_db_url, space_id)


def test_concurrent_pushes_are_all_counted(pg_db_url):
    with PgStore.open(pg_db_url) as store:
        space_id = store.ensure_space(SPACE)
        errors = []

        def push(sid):
            try:
                with PgStore.open(pg_db_url) as own:
                    for start in range(0, 60, 20):
                        own.push(batch(sid, 20, start=start))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=push, args=(f"c{i}",)) for i in range(4)]
        for thread in threads:
            thread.start()
        store.fold_tallies()   # folding while they push loses nothing
        for thread in threads:
            thread.join()
        assert not errors
        check(store, pg_db_url, space_id)


def test_a_database_from_before_the_migration_is_counted_when_it_upgrades(pg_db_url):
    with psycopg.connect(pg_db_url, autocommit=True) as conn:   # the schema as the previous version left it
        conn.execute(f"CREATE TABLE {migrations.TABLE} (name text PRIMARY KEY, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")
        for name, sql in migrations.available():
            if name < "0007":
                conn.execute(sql)
                conn.execute(f"INSERT INTO {migrations.TABLE} (name) VALUES (%s)", (name,))
        space_id = conn.execute("INSERT INTO spaces (key, provider, model, dimensions) VALUES (%s, %s, %s, %s) "
                                "RETURNING id", (SPACE.key, SPACE.provider, SPACE.model, 8)).fetchone()[0]
        conn.execute(f"CREATE TABLE {vector_table(space_id)} (message_id uuid NOT NULL REFERENCES messages (id) "
                     "ON DELETE CASCADE, chunk_index integer NOT NULL, start_char integer NOT NULL, "
                     "end_char integer NOT NULL, embedding vector(8) NOT NULL, PRIMARY KEY (message_id, chunk_index))")
        pg.register_vector_type(conn, pg_db_url)
        old = PgStore(conn, pg_db_url)
        old.push(batch("s1", 25, copies={2}))
        old.push(batch("s2", 15))
        answer, tallied = coverage(pg_db_url, space_id, ())
        assert not tallied and answer == counted(conn, space_id, ())   # not migrated yet: counted
    with PgStore.open(pg_db_url) as store:                           # migrates
        check(store, pg_db_url, space_id)
        store.push(batch("s2", 5, start=15))
        check(store, pg_db_url, space_id)
