"""The vector leg under a filter: a project or a date range holding few messages, far from the
query, gets its own nearest messages, exactly those, whichever way the planner goes and with either
index kind (at this size it reads the filtered rows rather than the index; at a million messages the
index's iterative scan does it, measured by scripts/bench_pg_scale.py with the recall against exact).
An ivfflat space's searches probe about the square root of its lists (pgvector's default is one)."""

import pytest

import numpy as np

from claude_chats.models import Space
from claude_chats.pgstore.search import open_search
from claude_chats.pgstore.store import PgStore, vector_table
from claude_chats.records import Batch, Conversation, Message, VectorRow
from claude_chats.search.core import Filters, Plan

DIMS = 16
SPACE = Space("test", "filtered", DIMS, {})


def corpus(rng, sessions=30, per=60, small="s-small"):
    """Sessions of random unit vectors near one direction; the small project's far from it."""
    batches, vectors = [], {}
    toward = np.zeros(DIMS, dtype=np.float32)
    toward[0] = 1.0
    for s in range(sessions):
        sid = small if s == 0 else f"s{s}"
        project = "/work/small" if s == 0 else f"/work/p{s % 3}"
        day = 1 + s % 28
        conversation = Conversation(sid, project, "main", sid, f"2026-02-{day:02d}T00:00:00Z",
                                    f"2026-02-{day:02d}T23:00:00Z", None, None, "m1", "2026-02-01T00:00:00Z")
        messages, chunks = [], []
        for i in range(per if s else 12):
            m = Message(f"{sid}-{i}", sid, i, "user", "text", f"message {i} of {sid}",
                        f"2026-02-{day:02d}T{i % 24:02d}:00:00Z")
            v = rng.standard_normal(DIMS).astype(np.float32) + (-3.0 if s == 0 else 3.0) * toward
            v /= np.linalg.norm(v)
            messages.append(m)
            chunks.append(VectorRow(m.message_uuid, 0, 0, len(m.content), v))
            vectors[m.message_uuid] = (v, project, m.created_at)
        batches.append(Batch([conversation], messages, chunks, SPACE))
    return batches, vectors, toward


def exact(vectors, query, keep, k=10):
    scored = sorted((float(1 - v @ query), uuid) for uuid, (v, project, at) in vectors.items() if keep(project, at))
    return [uuid for _, uuid in scored[:k]]


def load(pg_db_url, kind, rng):
    batches, vectors, toward = corpus(rng)
    with PgStore.open(pg_db_url) as store:
        space_id = store.ensure_space(SPACE, index_kind=kind)
        for batch in batches:
            store.push(batch)
        store.refresh_index(space_id)   # as `chats sync` does after a push
        assert store.has_index(space_id)
        store.conn.execute("ANALYZE")
    return space_id, vectors, toward


@pytest.mark.parametrize("kind", ["hnsw", "ivfflat"])
def test_filtered_vector_leg_returns_the_filters_nearest(pg_db_url, kind):
    rng = np.random.default_rng(3)
    space_id, vectors, toward = load(pg_db_url, kind, rng)
    backend = open_search(pg_db_url)
    try:
        uuid_of = dict(backend.conn.execute("SELECT id::text, message_uuid FROM messages").fetchall())
        cases = [(Filters.build(project_path="/work/small"), lambda p, at: p == "/work/small"),
                 # a bare date as until covers its whole day
                 (Filters.build(since="2026-02-05", until="2026-02-06"), lambda p, at: "2026-02-05" <= at < "2026-02-07"),
                 (Filters.build(), lambda p, at: True)]
        for filters, keep in cases:
            plan = Plan("q", ("semantic",), filters, toward.copy(), space_id, candidates=10)
            found = sorted(backend.candidates(plan), key=lambda c: c.ranks["semantic"])
            assert [uuid_of[str(c.key)] for c in found][:10] == exact(vectors, toward, keep), filters
    finally:
        backend.close()


def test_an_ivfflat_search_probes_the_square_root_of_its_lists(pg_db_url):
    space_id, vectors, toward = load(pg_db_url, "ivfflat", np.random.default_rng(4))
    with PgStore.open(pg_db_url) as store:   # 16 lists, as a bigger store would have
        table = vector_table(space_id)
        store.conn.execute(f"DROP INDEX {table}_embedding")
        store.conn.execute(f"CREATE INDEX {table}_embedding ON {table} USING ivfflat (embedding vector_cosine_ops) "
                           "WITH (lists = 16)")
        store.conn.execute("UPDATE spaces SET index_lists = 16 WHERE id = %s", (space_id,))
    backend = open_search(pg_db_url)
    try:
        plan = Plan("q", ("semantic",), Filters.build(), toward.copy(), space_id, candidates=10)
        assert backend.candidates(plan)
        probes, scan = (backend.conn.execute(f"SHOW ivfflat.{name}").fetchone()[0] for name in ("probes", "iterative_scan"))
        assert (probes, scan) == ("4", "relaxed_order")
    finally:
        backend.close()


def test_an_ivfflat_index_is_on_halfvec_and_its_candidates_are_ranked_exactly(pg_db_url):
    """The index holds vectors at half their size; the search orders by its expression (so it is
    used) and ranks and scores what it found by the exact distance."""
    space_id, vectors, toward = load(pg_db_url, "ivfflat", np.random.default_rng(5))
    table = vector_table(space_id)
    backend = open_search(pg_db_url)
    try:
        indexdef = backend.conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                                        (f"{table}_embedding",)).fetchone()[0]
        assert "::halfvec(16)" in indexdef and "ivfflat" in indexdef
        scans = f"SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = '{table}_embedding'"
        before = backend.conn.execute(scans).fetchone()[0]
        backend.conn.execute("SET enable_seqscan = off")   # the index, if the statement can use it
        plan = Plan("q", ("semantic",), Filters.build(), toward.copy(), space_id, candidates=10)
        found = sorted(backend.candidates(plan), key=lambda c: c.ranks["semantic"])
        backend.conn.execute("SELECT pg_stat_force_next_flush()")
        backend.conn.execute("SELECT 1")
        assert backend.conn.execute(scans).fetchone()[0] > before
        uuid_of = dict(backend.conn.execute("SELECT id::text, message_uuid FROM messages").fetchall())
        assert [uuid_of[str(c.key)] for c in found][:10] == exact(vectors, toward, lambda p, at: True)
        for c in found:   # the exact cosine, not half precision's (about 1e-3 off)
            assert abs(c.scores["semantic"] - float(vectors[uuid_of[str(c.key)]][0] @ toward)) < 1e-6
    finally:
        backend.close()
