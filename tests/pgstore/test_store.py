"""The Postgres store against a real Postgres: migrations, schema, idempotent pushes."""

import threading

import numpy as np
import psycopg
import pytest

from claude_chats.models import Space
from claude_chats.pgstore import migrations
from claude_chats.pgstore.store import (DEFAULT_INDEX_KIND, PgStore, ivfflat_build_mb, ivfflat_lists, ivfflat_probes,
                                        vector_table)
from claude_chats.records import Batch, Conversation, Message
from claude_chats.records import VectorRow as Chunk

T0 = "2026-01-01T00:00:00Z"


def conv(sid, name="first name", updated=T0, machine="m1", last="2026-01-01T01:00:00Z"):
    return Conversation(sid, "/work/proj", "main", name, T0, last, None, None, machine, updated)


def msgs(sid, n, start=0, prefix="u"):
    return [Message(f"{prefix}-{sid}-{i}", sid, i, "user" if i % 2 == 0 else "assistant", "text",
                    f"message {i} of {sid} about postgres migrations", T0) for i in range(start, start + n)]


def space(dims=8, model="t"):
    return Space("test", model, dims, {})


def canary_of(sp):
    return np.ones(sp.dimensions, dtype=np.float32) / np.sqrt(sp.dimensions)


def chunks(messages, dims=8):
    rng = np.random.default_rng(0)
    return [Chunk(m.message_uuid, 0, 0, len(m.content), rng.random(dims, dtype=np.float32)) for m in messages]


@pytest.fixture
def store(pg_db_url):
    with PgStore.open(pg_db_url) as s:
        yield s


def snapshot(conn):
    """Every row's physical identity (ctid, xmin): unchanged means nothing was written."""
    tables = ["conversations", "messages", "spaces"] + [
        vector_table(i) for (i,) in conn.execute("SELECT id FROM spaces")]
    return {t: conn.execute(f"SELECT ctid::text, xmin::text FROM {t} ORDER BY ctid").fetchall() for t in tables}


def test_migrations_apply_once_and_are_recorded(pg_db_url):
    with psycopg.connect(pg_db_url, autocommit=True) as conn:
        names = [name for name, _ in migrations.available()]
        assert migrations.migrate(conn) == names
        assert migrations.migrate(conn) == []
        assert migrations.applied(conn) == set(names)


def test_concurrent_migrations_apply_each_file_once(pg_db_url):
    results, errors = [], []

    def run():
        try:
            with psycopg.connect(pg_db_url, autocommit=True) as conn:
                results.append(migrations.migrate(conn))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(sum(results, [])) == sorted(name for name, _ in migrations.available())


def test_migrations_ship_with_the_package():
    names = [name for name, _ in migrations.available()]
    assert names[0] == "0001_init.sql" and names == sorted(names)


def test_tombstones_table_created_on_demand_earlier_is_adopted(pg_db_url):
    from claude_chats.pgstore.purge import ensure_tombstones
    with psycopg.connect(pg_db_url, autocommit=True) as conn:
        ensure_tombstones(conn)
        migrations.migrate(conn)
        assert "0002_purges.sql" in migrations.applied(conn)


def test_seed_schema_names_work(store):
    store.push(Batch([conv("s1")], msgs("s1", 3), [], None))
    rows = store.conn.execute(
        "SELECT c.session_id, c.project_path, c.git_branch, c.name, c.started_at, m.message_uuid, m.role, "
        "m.kind, m.sequence_num, m.created_at FROM messages m JOIN conversations c ON c.id = m.conversation_id "
        "WHERE m.content_tsv @@ plainto_tsquery('english', 'migration') ORDER BY m.sequence_num").fetchall()
    assert [r[8] for r in rows] == [0, 1, 2]
    assert rows[0][:4] == ("s1", "/work/proj", "main", "first name")


def test_push_is_idempotent(store):
    batch = Batch([conv("s1"), conv("s2")], msgs("s1", 5) + msgs("s2", 4), [], None)
    batch = batch._replace(chunks=chunks(batch.messages), space=space())
    first = store.push(batch)
    assert (first.conversations, first.messages, first.chunks, first.missing) == (2, 9, 9, [])
    before = snapshot(store.conn)
    again = store.push(batch)
    assert (again.conversations, again.messages, again.chunks, again.missing) == (0, 0, 0, [])
    assert snapshot(store.conn) == before
    assert store.counts() == {"conversations": 2, "messages": 9, "vectors": {"test/t/8/{}": 9}}


def test_vectors_keep_their_space_and_canary(store):
    sp = space(8)
    ms = msgs("s1", 2)
    store.ensure_space(sp, canary_of(sp))   # as sync does before its batches
    store.push(Batch([conv("s1")], ms, chunks(ms), sp))
    (row,) = store.spaces()
    assert (row["key"], row["dimensions"], row["index_kind"]) == (sp.key, 8, DEFAULT_INDEX_KIND)
    assert np.allclose(row["canary"].to_numpy(), canary_of(sp))
    assert not store.has_index(row["id"])    # an ivfflat index is trained on vectors: after the push,
    assert store.refresh_index(row["id"]) == 1 and store.has_index(row["id"])   # as `chats sync` does


def test_newer_rename_wins_and_older_does_not(store):
    store.push(Batch([conv("s1", "old", updated="2026-01-01T00:00:00Z")], msgs("s1", 1), [], None))
    store.push(Batch([conv("s1", "renamed", updated="2026-01-02T00:00:00Z")], [], [], None))
    store.push(Batch([conv("s1", "stale", updated="2026-01-01T12:00:00Z", machine="m2")], [], [], None))
    name, machine = store.conn.execute("SELECT name, machine FROM conversations").fetchone()
    assert (name, machine) == ("renamed", "m1")


def test_conversation_span_grows(store):
    store.push(Batch([conv("s1", last="2026-01-01T01:00:00Z")], [], [], None))
    result = store.push(Batch([conv("s1", last="2026-01-03T00:00:00Z")], [], [], None))
    assert result.conversations == 1
    last = store.conn.execute("SELECT last_at::text FROM conversations").fetchone()[0]
    assert last.startswith("2026-01-03")


def test_sequence_collision_from_another_journal_is_kept(store):
    store.push(Batch([conv("s1")], msgs("s1", 3), [], None))
    other = msgs("s1", 2, prefix="other")   # same seqs 0, 1; different uuids
    result = store.push(Batch([conv("s1")], other, [], None))
    assert result.messages == 2 and result.missing == []
    seqs = [r[0] for r in store.conn.execute("SELECT sequence_num FROM messages ORDER BY 1")]
    assert seqs == [0, 1, 2, 3, 4]


def test_ivfflat_lists_follow_row_count(store):
    assert ivfflat_lists(500) == 1 and ivfflat_lists(50_000) == 50 and ivfflat_lists(4_000_000) == 2000
    sp = space(8, model="ivf")
    space_id = store.ensure_space(sp, canary_of(sp), index_kind="ivfflat")
    assert not store.has_index(space_id)
    ms = msgs("s1", 50)
    store.push(Batch([conv("s1")], ms, chunks(ms), sp))
    assert store.refresh_index(space_id) == 1
    assert store.has_index(space_id)


def test_ivfflat_probes_and_build_memory():
    assert DEFAULT_INDEX_KIND == "ivfflat"
    assert [ivfflat_probes(n) for n in (None, 1, 3, 100, 1000, 2000)] == [1, 1, 2, 10, 32, 45]
    # what pgvector 0.8.5 asked for: 273 MB for 1,000 lists of 384 dimensions, 15 MB for 10 to 200
    assert 273 <= ivfflat_build_mb(1000, 384) < 1.2 * 273 and ivfflat_build_mb(2000, 384) > ivfflat_build_mb(1000, 384)
    assert 15 <= ivfflat_build_mb(10, 384) <= ivfflat_build_mb(200, 384) < 2 * 15


def test_an_ivfflat_build_fits_the_memory_it_is_given_and_not_much_less(store):
    """ivfflat_build_mb against pgvector itself: it refuses to train its lists with less than it needs."""
    sp = space(384, model="ivf-memory")
    space_id = store.ensure_space(sp, canary_of(sp), index_kind="ivfflat")
    rng = np.random.default_rng(5)
    for b in range(5):
        ms = msgs(f"s{b}", 500)
        store.push(Batch([conv(f"s{b}")], ms, [Chunk(m.message_uuid, 0, 0, 1, rng.standard_normal(384).astype(np.float32))
                                              for m in ms], sp))
    table, lists = vector_table(space_id), 50     # 2,500 vectors: pgvector samples 50 a list, all of them
    create = f"CREATE INDEX {table}_probe ON {table} USING ivfflat (embedding vector_cosine_ops) WITH (lists = {lists})"
    short = int(0.6 * ivfflat_build_mb(lists, 384))
    store.conn.execute(f"SET maintenance_work_mem = '{short}MB'")
    with pytest.raises(psycopg.errors.ProgramLimitExceeded):
        store.conn.execute(create)
    store.conn.execute(f"SET maintenance_work_mem = '{ivfflat_build_mb(lists, 384)}MB'")
    store.conn.execute(create)
    store.conn.execute("RESET maintenance_work_mem")


@pytest.mark.parametrize("kind", ["hnsw", "ivfflat"])
def test_wide_vectors_get_a_halfvec_index(store, kind):
    sp = space(3072)
    space_id = store.ensure_space(sp, canary_of(sp), index_kind=kind)
    ms = msgs("s1", 2)
    store.push(Batch([conv("s1")], ms, chunks(ms, 3072), sp))
    store.refresh_index(space_id)   # as `chats sync` does after pushing vectors: an ivfflat index is built then
    indexdef = store.conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                                  (f"{vector_table(space_id)}_embedding",)).fetchone()[0]
    assert "halfvec" in indexdef and kind in indexdef


def test_dropped_index_is_rebuilt(store):
    sp = space()
    ms = msgs("s1", 3)
    store.push(Batch([conv("s1")], ms, chunks(ms), sp))
    space_id = store.ensure_space(sp, canary_of(sp))
    store.drop_index(space_id)
    assert store.ensure_index(space_id) is True
    assert store.ensure_index(space_id) is False


def test_text_index_is_dropped_for_a_load_and_rebuilt_as_the_migration_made_it(store):
    definition = "SELECT indexdef FROM pg_indexes WHERE indexname = 'messages_content_tsv'"
    made = store.conn.execute(definition).fetchone()[0]
    assert store.owns_messages() and store.has_text_index() and store.ensure_text_index() is False
    assert store.drop_text_index() is True and not store.has_text_index()
    store.push(Batch([conv("s1")], msgs("s1", 3), [], None))
    assert store.ensure_text_index() is True
    assert store.conn.execute(definition).fetchone()[0] == made
    assert store.message_count() == 3   # ANALYZE ran with the rebuild: the estimate is exact here


def test_an_index_drop_gives_up_while_a_reader_holds_the_table(store, pg_db_url):
    sp = space()
    store.push(Batch([conv("s1")], msgs("s1", 2), chunks(msgs("s1", 2)), sp))
    space_id = store.ensure_space(sp, canary_of(sp))
    store.refresh_index(space_id)
    with psycopg.connect(pg_db_url) as reader:   # a search in progress: an open transaction reading both
        reader.execute(f"SELECT count(*) FROM messages, {vector_table(space_id)}")
        assert store.drop_text_index() is False and store.drop_index(space_id) is False
    assert store.has_text_index() and store.has_index(space_id)


def store_conn_count(url, sql):
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql).fetchone()[0]


def test_a_push_does_not_wait_for_a_concurrent_push_of_the_same_session(store, pg_db_url):
    """Batches of one session pushed at once on two connections: the second does not queue
    behind the first's transaction (the conversation row is committed before the messages)."""
    sp = space()
    first = msgs("s1", 4)
    store.push(Batch([conv("s0")], [], chunks(msgs("s0", 1)), sp))   # creates the space's table
    table = vector_table(store.ensure_space(sp, canary_of(sp)))
    with psycopg.connect(pg_db_url) as blocker:
        blocker.execute(f"LOCK TABLE {table} IN SHARE MODE")        # the first push stops at its vectors
        results = {}
        worker = threading.Thread(target=lambda: results.setdefault(
            "first", store.push(Batch([conv("s1")], first, chunks(first), sp))))
        worker.start()
        waiting = f"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%{table}%'"
        for _ in range(200):
            if store_conn_count(pg_db_url, waiting):
                break
            threading.Event().wait(0.05)
        else:
            raise AssertionError("the first push never reached its vectors")
        with PgStore.open(pg_db_url) as other:
            other.conn.execute("SET lock_timeout = '3s'")
            second = other.push(Batch([conv("s1", last="2026-01-02T00:00:00Z")], msgs("s1", 3, start=4), [], None))
        assert (second.conversations, second.messages, second.missing) == (1, 3, [])
        assert worker.is_alive()
    worker.join(10)
    assert results["first"].messages == 4 and results["first"].chunks == 4
    assert store.counts()["messages"] == 7
