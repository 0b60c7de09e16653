"""The journal's vector index (``localstore.ivf``): what it finds against brute force, what survives a
kill -9 mid-update, what a purge leaves on disk, that spaces never mix, the conversion of a journal
of an older version (sqlite-vec table), and an index that is gone."""

import os
import subprocess
import sys

import apsw
import numpy as np
import pytest

from claude_chats import paths
from claude_chats.faults import ENV
from claude_chats.localstore import db, ivf, outbox, vectors, writer
from claude_chats.localstore.db import Immediate
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.models import canary_vector
from claude_chats.models.chunking import Chunk
from tests.support import ROOT
from tests.support.fakes import HashEmbedder
from tests.support.stand_ins import chats
from tests.support.vectors import assert_decoded, similarity_slack, stored_codes

DIMS = 32   # HashEmbedder's space


def clustered(n, seed, dims=DIMS, clusters=24):
    """Unit vectors around random centres: near ties, as real chunk vectors have."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dims))
    x = centres[rng.integers(0, clusters, n)] + 0.35 * rng.standard_normal((n, dims))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def fill(conn, sessions, per_session, seed=7, old_codes=False):
    """Messages of ``sessions`` with one random vector each in HashEmbedder's space; (space id, {message id: vector}).
    ``old_codes``: the space's index as versions before 2026-12-05 made it (8-bit fine codes, no ``fine_bits``)."""
    provider = HashEmbedder()
    space_id = vectors.ensure_space(conn, provider.space, canary_vector(provider))
    if old_codes:
        with conn:
            conn.execute(f"DELETE FROM ivf_{space_id}_meta WHERE key = 'fine_bits'")
    data = clustered(len(sessions) * per_session, seed)
    out, n = {}, 0
    with conn:
        for session in sessions:
            conn.execute("INSERT INTO sessions(id, updated_at) VALUES (?, '2026-01-01')", (session,))
            for seq in range(per_session):
                conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content, synced) "
                             "VALUES (?, ?, ?, 'user', 'text', ?, 1)",
                             (f"{session}-{seq}", writer.session_number(conn, session), seq, f"text {n}"))
                message = conn.last_insert_rowid()
                vectors.write_message_vectors(conn, space_id, message, [Chunk(0, 0, 4, data[n])])
                out[message] = data[n]
                n += 1
    return space_id, out


def add_late(conn, space_id, session, late, name="late"):
    """Messages added to ``session`` after the lists were trained, one vector each: {message id: vector}."""
    out = {}
    with conn:
        for n, v in enumerate(late):
            conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content) VALUES (?, ?, ?, 'user', "
                         "'text', 'late')", (f"{name}-{n}", writer.session_number(conn, session), 100_000 + n))
            out[conn.last_insert_rowid()] = v
            vectors.write_message_vectors(conn, space_id, conn.last_insert_rowid(), [Chunk(0, 0, 4, v)])
    return out


def exact_top(stored, query, k=10):
    ids = np.array(list(stored))
    sims = np.stack(list(stored.values())) @ query
    return set(ids[np.argsort(-sims)[:k]].tolist())


def chunk_of(conn):
    return dict(conn.execute("SELECT id, message_id FROM chunks").fetchall())


def tx(conn):
    return lambda: Immediate(conn)


@pytest.fixture
def conn(tmp_path):
    c = db.connect(str(tmp_path / "journal.db"))
    yield c
    c.close()


def test_trained_lists_find_what_brute_force_finds(conn):
    space_id, stored = fill(conn, ["s1"], 4000)
    ivf.retrain(conn, space_id, tx(conn), nlist=64)
    assert ivf.counts(conn, space_id) == (4000, 0)          # every vector moved into the lists
    reader = ivf.Reader(conn, space_id, scan=1000)         # ~16 of 64 lists probed
    chunks, queries = chunk_of(conn), clustered(60, seed=99)
    recall, probed_all = [], []
    for q in queries:
        ids, sims = reader.nearest(q, 10)
        probed_all.append(reader.whole)
        recall.append(len({chunks[i] for i in ids.tolist()} & exact_top(stored, q)) / 10)
        assert np.all(np.diff(sims) <= 1e-7)               # best first
        np.testing.assert_allclose(sims[0], max(stored[chunks[i]] @ q for i in ids.tolist()),
                                   atol=similarity_slack(conn, space_id, list(stored.values())))
    assert not any(probed_all)
    assert np.mean(recall) >= 0.98, np.mean(recall)
    # what vectors_of gives back is what was stored, within the codes' bound
    some = list(chunks)[:50]
    back = ivf.vectors_of(conn, space_id, some)
    for chunk in some:
        assert_decoded(conn, space_id, back[chunk], stored[chunks[chunk]])


def test_the_fine_codes_re_rank_a_margin_beyond_what_is_asked(conn):
    """The coarse codes' order is only near the exact one: the fine codes re-rank more candidates than
    asked (``RERANK_SHARE``, ``RERANK_MIN``), so nothing clearly among the best ``count`` is left out."""
    space_id, stored = fill(conn, ["s1"], 4000)     # one list, scanned whole
    reader, chunks = ivf.Reader(conn, space_id), chunk_of(conn)
    slack = similarity_slack(conn, space_id, list(stored.values()))
    ids_all, matrix = np.array(list(stored)), np.stack(list(stored.values()))
    for count in (10, 200, 800):
        for q in clustered(15, seed=count):
            found = {chunks[i] for i in reader.nearest(q, count)[0].tolist()}
            sims = matrix @ q
            edge = np.sort(sims)[-count]
            clearly = set(ids_all[sims > edge + 2 * slack].tolist())
            assert clearly <= found, (count, len(clearly - found))


def test_the_scan_scores_every_row_as_the_float_product_within_the_query_codes_bound(conn):
    """The coarse scores of a scan are each row's decoded-coarse product with the float query, for the lists
    and the tail, whatever the lists' sizes (the codes' buffer is reused and grown), within what the
    query's own int8 codes allow (``ivf.Query``: s / 508 a component, so sum|c| x scale x s / 508 a row)."""
    space_id, stored = fill(conn, ["s1"], 3000)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    add_late(conn, space_id, "s1", clustered(40, seed=5))        # a tail too
    reader = ivf.Reader(conn, space_id, scan=1)                  # a few lists probed, of several sizes
    worst = 0.0
    for q in clustered(5, seed=11):
        q = q / np.linalg.norm(q)
        reader.refresh(None)
        ids, scales, coarse, lists, slots = reader._scan(reader._probe(q), q)
        rows = {}
        for lst in set(lists[lists >= 0].tolist()):
            blob = conn.execute(f"SELECT codes FROM ivf_{space_id}_lists WHERE list = ?", (lst,)).fetchall()[0][0]
            rows[lst] = reader.codec.codes_rows(blob)
        tail = dict((i, reader.codec.codes_rows(c)[0]) for i, c in
                    conn.execute(f"SELECT id, codes FROM ivf_{space_id}_tail").fetchall())
        codes = np.array([(rows[lst][slot] if lst >= 0 else tail[int(i)]) for i, lst, slot in zip(ids, lists, slots)],
                         np.float64)
        expected = codes @ q * scales
        bound = np.abs(codes).sum(axis=1) * scales * (np.abs(q).max() / 127 / 508) + 1e-6
        assert (lists == -1).any() and len(set(lists.tolist())) > 2
        assert (np.abs(coarse - expected) <= bound).all()
        worst = max(worst, float(np.abs(coarse - expected).max()))
    assert worst < 1e-4


def test_the_query_codes_stand_for_the_query_within_their_bound():
    """``ivf.Query``: two rows of int8 codes whose weighted sum is the query within s / 508 a component (the
    high row alone is within s / 2), for unit queries, a zero query and one dominated by a component."""
    rng = np.random.default_rng(3)
    queries = [q / np.linalg.norm(q) for q in rng.normal(size=(50, 384))]
    queries += [np.zeros(384, np.float32), np.eye(384, dtype=np.float32)[7] * 0.999 + 1e-3]
    for q in queries:
        made = ivf.Query(q)
        assert made.codes.dtype == np.int8 and made.codes.shape == (2, 384)
        back = made.codes[0] * np.float64(made.scale) + made.codes[1] * np.float64(made.fine_scale)
        top = float(np.abs(q).max())
        assert np.abs(back - q).max() <= (top / 127) / 508 * 1.001 + 1e-9
        if top:
            assert np.abs(made.codes[0] * np.float64(made.scale) - q).max() > (top / 127) / 508  # the low row is needed


@pytest.mark.parametrize("dims", [384, 1024, 3072])
def test_the_scan_products_hold_at_the_largest_codes(dims):
    """Codes at +-127 in every component (a vector with one value repeated) and a dense query: the scan's
    integer products reach d x 127^2 (16.5M at 1,024 dimensions, past float32's 2^24 at 3,072), and its
    coarse cosines stay within the query codes' bound of the float products."""
    rng = np.random.default_rng(dims)
    codes = np.vstack([np.full(dims, 127, np.int8), np.full(dims, -127, np.int8),
                       rng.integers(-127, 128, (30, dims)).astype(np.int8)])
    scales = rng.uniform(1e-4, 1e-2, len(codes)).astype(np.float32)
    q = rng.normal(size=dims)
    q /= np.linalg.norm(q)
    got = ivf.Query(q).coarse(codes, scales)
    want = codes.astype(np.float64) @ q * scales
    bound = np.abs(codes).sum(axis=1) * scales * (np.abs(q).max() / 127 / 508) + 1e-6 * np.abs(want) + 1e-9
    assert got.dtype == np.float32 and (np.abs(got - want) <= bound).all()


def test_maintain_folds_the_tail_at_a_sixty_fourth_of_the_space(conn, monkeypatch):
    """A search reads its tail rows through SQL (1.5 us a row against 0.2 in a list): ``maintain`` folds
    the tail once it holds 1/64 of the space (1/16 before), not later. ``TAIL_MIN`` lowered so that a
    small space shows the share (at 1M the share is what counts: 18,600 rows)."""
    monkeypatch.setattr(ivf, "TAIL_MIN", 16)
    space_id, _ = fill(conn, ["s1", "s2"], 1600)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    add_late(conn, space_id, "s1", clustered(49, seed=5))           # 49 < 3,249 / 64
    assert ivf.maintain(conn, space_id, tx(conn)) is None
    add_late(conn, space_id, "s2", clustered(8, seed=6), name="later")   # 57 >= 3,257 / 64 (and < 1/16)
    assert ivf.maintain(conn, space_id, tx(conn)) == "folded"
    assert ivf.counts(conn, space_id) == (3257, 0)


def test_tail_folds_into_the_lists_and_deleted_slots_are_zeroed(conn):
    space_id, stored = fill(conn, ["s1", "s2"], 1500)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    add_late(conn, space_id, "s2", clustered(300, seed=5))
    assert ivf.counts(conn, space_id) == (3000, 300)
    ivf.fold(conn, space_id, tx(conn))
    assert ivf.counts(conn, space_id) == (3300, 0)
    gone = [m for (m,) in conn.execute("SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 's1')")]
    gone_chunks = [c for c, m in chunk_of(conn).items() if m in gone]
    codes = stored_codes(conn, space_id, gone_chunks)
    assert len(codes) == 2 * len(gone_chunks)
    with conn:
        conn.execute("DELETE FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 's1')")     # cascade: chunks, then the trigger
        assert vectors.zero_deleted(conn) == len(gone_chunks)
    assert stored_codes(conn, space_id, gone_chunks) == []
    assert set(ivf.live(conn, space_id).tolist()) == set(chunk_of(conn))
    blobs = b"".join(bytes(b) for row in conn.execute(f"SELECT codes, fine FROM ivf_{space_id}_lists") for b in row)
    blobs += b"".join(bytes(b) for (b,) in conn.execute(f"SELECT fine FROM ivf_{space_id}_fine"))
    assert len(blobs) > 3300 * (DIMS + DIMS // 2) - 1   # every code of the lists, coarse and fine
    assert not [c for c in codes if any(c) and c in blobs]
    ids, _ = ivf.Reader(conn, space_id).nearest(stored[gone[0]], 50)
    assert not set(ids.tolist()) & set(gone_chunks)


def test_an_index_made_before_keeps_its_eight_bit_codes_through_every_change(conn):
    """A journal's index made before 4-bit fine codes is read as it was written, and its tail, folds and
    retrains keep its format: never two formats in one index."""
    space_id, stored = fill(conn, ["s1", "s2"], 1500, old_codes=True)
    form = ivf.codec(conn, space_id)
    assert (form.fine_bits, form.fine_width) == (8, DIMS)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    stored.update(add_late(conn, space_id, "s2", clustered(300, seed=5)))
    ivf.fold(conn, space_id, tx(conn))
    stored.update(add_late(conn, space_id, "s1", clustered(50, seed=6), name="later"))   # left in the tail
    assert ivf.codec(conn, space_id).fine_bits == 8
    widths = conn.execute(f"SELECT length(f.fine) / (length(l.ids) / 8) FROM ivf_{space_id}_lists l "
                          f"LEFT JOIN ivf_{space_id}_fine f USING (list)").fetchall()
    assert {w for (w,) in widths} == {DIMS}
    assert {len(f) for (f,) in conn.execute(f"SELECT fine FROM ivf_{space_id}_tail")} == {DIMS}
    chunks = chunk_of(conn)
    back = ivf.vectors_of(conn, space_id, list(chunks))
    for chunk, message in chunks.items():   # within s / 508: what the old format promised
        want = stored[message]
        np.testing.assert_allclose(back[chunk], want, rtol=0, atol=float(np.abs(want).max()) * (1 / (127 * 508) + 1e-6))
    for q in clustered(10, seed=3):
        ids, sims = ivf.Reader(conn, space_id, scan=10**9).nearest(q, 10)
        assert {chunks[i] for i in ids.tolist()} == exact_top(stored, q)
        np.testing.assert_allclose(sims, [stored[chunks[i]] @ q for i in ids.tolist()],
                                   atol=similarity_slack(conn, space_id, list(stored.values())))


def test_a_new_index_has_four_bit_codes_and_a_made_index_keeps_its_format(conn):
    space_id, _ = fill(conn, ["s1"], 200)
    assert ivf.codec(conn, space_id).fine_bits == 4
    assert {len(f) for (f,) in conn.execute(f"SELECT fine FROM ivf_{space_id}_tail")} == {DIMS // 2}
    with conn:
        ivf.set_dimensions(conn, space_id, DIMS, fine_bits=8)      # a conversion run again: nothing changes
    assert ivf.codec(conn, space_id).fine_bits == 4
    with conn:
        conn.execute(f"UPDATE ivf_{space_id}_meta SET value = 2 WHERE key = 'fine_bits'")   # a newer version's
    with pytest.raises(ValueError, match="2 bits: this version reads 4 or 8"):
        ivf.Reader(conn, space_id).nearest(clustered(1, seed=1)[0], 5)


KILLER = """
import sys
from claude_chats.localstore import db, ivf
from claude_chats.localstore.db import Immediate
conn = db.connect(sys.argv[1])
space_id = int(sys.argv[2])
if sys.argv[3] == "retrain":
    ivf.retrain(conn, space_id, lambda: Immediate(conn), nlist=32)
elif sys.argv[3] == "separate":
    ivf.separate(conn, space_id, lambda: Immediate(conn))
else:
    ivf.fold(conn, space_id, lambda: Immediate(conn))
"""


def test_a_locator_kept_across_calls_answers_as_a_fresh_read_after_folds_retrains_and_purges(conn):
    """A sync keeps one ``Locator`` for all its batches: what it answers after the lists changed under
    it (a fold appends, a retrain moves every chunk, a purge zeroes slots) is what a fresh read gives."""
    space_id, stored = fill(conn, ["s1", "s2"], 1500)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    locator = ivf.Locator()
    chunks = chunk_of(conn)

    def same(ids):
        kept, fresh = ivf.vectors_of(conn, space_id, ids, locator), ivf.vectors_of(conn, space_id, ids)
        assert kept.keys() == fresh.keys()
        for chunk in kept:
            np.testing.assert_array_equal(kept[chunk], fresh[chunk])
        return kept

    first = same(list(chunks)[:200])
    assert len(first) == 200 and locator.ids is not None
    for chunk in first:   # right vectors, not only the same ones
        assert_decoded(conn, space_id, first[chunk], stored[chunks[chunk]])
    late = add_late(conn, space_id, "s2", clustered(300, seed=5))
    ivf.fold(conn, space_id, tx(conn))                       # appended to the lists after the locator was read
    late_chunks = [c for c, m in chunk_of(conn).items() if m in late]
    assert len(same(late_chunks + list(chunks)[200:260])) == 360
    ivf.retrain(conn, space_id, tx(conn), nlist=24)          # every chunk elsewhere
    assert len(same(list(chunks)[500:700])) == 200
    gone = [m for (m,) in conn.execute("SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 's1')")]
    gone_chunks = [c for c, m in chunk_of(conn).items() if m in gone][:100]
    locator.read(conn, f"ivf_{space_id}_lists")
    with conn:
        conn.execute("DELETE FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 's1')")
        assert vectors.zero_deleted(conn) >= len(gone_chunks)
    assert same(gone_chunks + late_chunks[:5]).keys() == set(late_chunks[:5])   # zeroed slots are no answer


def test_a_syncs_read_ahead_answers_each_batch_as_a_read_of_that_batch_would(conn, tmp_path, monkeypatch):
    """``LocalVectors.load`` reads the vectors of many batches at once (the index's lists are long blobs,
    each read walks their pages): what it answers, batch after batch, is what reading the batch alone
    gives, also after this run replaced a message's vectors and after another process purged messages
    and its new ones took their ids."""
    monkeypatch.setattr(vectors, "READ_AHEAD", 700)
    space_id, stored = fill(conn, ["s1", "s2", "s3"], 1000)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    provider = HashEmbedder()
    local = vectors.LocalVectors(conn)
    local.prepare(provider.space, canary_vector(provider))
    assert local.space_id == space_id
    ids = sorted(stored)
    reads = []
    real = vectors.read_ahead
    monkeypatch.setattr(vectors, "read_ahead", lambda *a: reads.append(a[2]) or real(*a))

    def same(batch):
        got, alone = local.load(batch), vectors.load_message_vectors(conn, space_id, batch)
        assert got.keys() == alone.keys() == set(batch)
        for m in batch:
            assert [c[:3] for c in got[m]] == [c[:3] for c in alone[m]]
            np.testing.assert_array_equal(got[m][0].vector, alone[m][0].vector)
        return got

    for start in range(0, 1400, 200):
        same(ids[start:start + 200])
    assert reads == [ids[0], ids[600], ids[1200]]   # one chunk each: a read holds 699 messages whole, not 7 x 200
    same(ids[1400:2300])                         # a batch bigger than a read ahead: read alone
    replaced = ids[2350]
    new = clustered(1, seed=11)[0]
    same(ids[2300:2340])
    local.save({replaced: [Chunk(0, 0, 4, new)]})
    got = same(ids[2340:2400])[replaced][0].vector
    assert_decoded(conn, space_id, got, new)

    other = db.connect(str(tmp_path / "journal.db"))   # another process: a purge, then the hook
    last = ids[-50:]
    with other:
        other.execute("DELETE FROM messages WHERE id IN (SELECT value FROM json_each(?))", (str(last),))
    vectors.zero_deleted(conn)
    before = len(reads)
    same(ids[2900:2940])
    later = clustered(50, seed=12)
    with other:
        for n, v in enumerate(later):
            other.execute("INSERT INTO messages(id, uuid, session, seq, role, kind, content) VALUES "
                          "(?, ?, ?, ?, 'user', 'text', 'new')",
                          (last[n], f"new-{n}", writer.session_number(other, "s3"), 5000 + n))
            vectors.write_message_vectors(other, space_id, last[n], [Chunk(0, 0, 3, v)])
    other.close()
    got = same(last)
    assert len(reads) > before
    for n, m in enumerate(last):
        assert_decoded(conn, space_id, got[m][0].vector, later[n])


def one_project(tmp_path, which, project, elsewhere, nlist=None):
    """A journal of 100 sessions (``s000``..) of 40 messages with a vector each: the sessions ``which``
    (SQL over ``sessions``) in ``project``, the others in ``elsewhere``; lists trained when ``nlist``.
    (path, space id, {message id: vector} of the project's messages, what the codes may move a cosine)."""
    path = str(tmp_path / "journal.db")
    conn = db.connect(path)
    space_id, stored = fill(conn, [f"s{n:03d}" for n in range(100)], 40)
    if nlist:
        ivf.retrain(conn, space_id, tx(conn), nlist=nlist)
    with conn:
        conn.execute("UPDATE sessions SET project_path = ?", (elsewhere,))
        conn.execute(f"UPDATE sessions SET project_path = ? WHERE {which}", (project,))
    mine = {m: stored[m] for (m,) in conn.execute(
        "SELECT m.id FROM messages m JOIN session_numbers n ON n.number = m.session "
        "JOIN sessions s ON s.id = n.session_id WHERE s.project_path = ?", (project,))}
    slack = similarity_slack(conn, space_id, list(mine.values()))
    conn.close()
    return path, space_id, mine, slack


def test_a_project_the_index_finds_too_few_of_is_scored_exactly_from_its_sessions(tmp_path):
    """One project among a hundred: the nearest chunks of the whole space hold too few of its messages,
    so its chunks are read (from its sessions, then their messages) and scored exactly. What comes
    back is brute force over that project alone; a project that is only a prefix of the name finds
    nothing."""
    from claude_chats.search.core import Filters, Plan

    path, space_id, mine, slack = one_project(tmp_path, "id = 's042'", "/work/small/app", "/work/big", nlist=64)
    search = LocalSearch.open(path)
    try:
        for seed in (3, 4, 5):
            q = clustered(1, seed=seed)[0]
            plan = Plan("q", ("semantic",), Filters.build(project_path="/work/small"), vector=q,
                        space_id=space_id, candidates=20)
            found = search.semantic(plan)
            assert {c.session_id for c in found} == {"s042"} and len(found) == 20
            assert {c.key for c in found} == exact_top(mine, q, 20)
            for c in found:
                assert abs(c.scores["semantic"] - float(mine[c.key] @ q)) < slack
            prefix = Plan("q", ("semantic",), Filters.build(project_path="/work/sma"), vector=q, space_id=space_id)
            assert search.semantic(prefix) == []
    finally:
        search.close()


def test_a_filter_too_wide_to_score_exactly_keeps_its_chunks_before_they_are_re_ranked(tmp_path, monkeypatch):
    """A filter that leaves more chunks than an exact scoring takes is answered from the index: the
    candidates are looked up before their fine codes are read, and what comes back is the filter's own
    best (as brute force over it finds them), never a chunk it leaves out."""
    from claude_chats.localstore import search as local_search
    from claude_chats.search.core import Filters, Plan

    monkeypatch.setattr(local_search, "EXACT_MAX", 50)
    monkeypatch.setattr(LocalSearch, "_exact_index", lambda *a: pytest.fail("scored exactly, not from the index"))
    path, space_id, mine, slack = one_project(tmp_path, "id < 's010'", "/work/app", "/work/other")   # one list
    search = LocalSearch.open(path)
    try:
        for seed in (11, 12, 13):
            q = clustered(1, seed=seed)[0]
            plan = Plan("q", ("semantic",), Filters.build(project_path="/work/app"), vector=q,
                        space_id=space_id, candidates=20)
            found = search.semantic(plan)
            assert len(found) == 20 and {c.session_id for c in found} <= {f"s{n:03d}" for n in range(10)}
            sims = sorted((float(v @ q) for v in mine.values()), reverse=True)
            assert [c.scores["semantic"] for c in found] == pytest.approx(sims[:20], abs=slack)
            assert len({c.key for c in found} & exact_top(mine, q, 20)) >= 19   # a near tie may swap
    finally:
        search.close()


def test_whether_a_filter_leaves_few_enough_chunks_to_score_exactly_is_counted_to_the_chunk(tmp_path):
    """A filter's chunks are counted up to one more than the most an exact scoring takes, by session (a
    project) or not: exactly ``most`` is few enough, one more is not, and the count is of the space's
    chunks that pass every condition."""
    from claude_chats.localstore.search import _filters
    from claude_chats.search.core import Filters

    path = str(tmp_path / "journal.db")
    conn = db.connect(path)
    space_id, _stored = fill(conn, [f"s{n}" for n in range(6)], 25)
    with conn:
        conn.execute("UPDATE sessions SET project_path = '/work/app' WHERE id IN ('s1', 's2')")
    conn.close()
    search = LocalSearch.open(path)
    try:
        for filters, chunks in ((Filters.build(project_path="/work/app"), 50),
                                (Filters.build(project_path="/work/app", role="user"), 50),
                                (Filters.build(), 150)):
            where, args = _filters(filters)
            by_session = bool(filters.project_path)
            assert search._chunks_within(space_id, where, args, chunks, by_session)
            assert not search._chunks_within(space_id, where, args, chunks - 1, by_session)
            assert len(search._filtered_chunks(space_id, where, args, by_session)) == chunks
        where, args = _filters(Filters.build(project_path="/work/app"))
        assert search._chunks_within(space_id + 1, where, args, 0, True)   # another space has none of them
    finally:
        search.close()


@pytest.mark.parametrize("step, point", [("retrain", "mid-retrain@1"), ("retrain", "before-drop-old"),
                                         ("fold", "mid-fold@3")])
def test_killed_mid_update_the_index_keeps_every_vector_once(tmp_path, step, point):
    path = str(tmp_path / "journal.db")
    conn = db.connect(path)
    space_id, stored = fill(conn, ["s1"], 2500)
    ivf.retrain(conn, space_id, tx(conn), nlist=8)
    stored.update(add_late(conn, space_id, "s1", clustered(400, seed=11)))
    before = sorted(ivf.live(conn, space_id).tolist())
    conn.close()
    env = {**os.environ, ENV: point, "PYTHONPATH": ROOT}
    killed = subprocess.run([sys.executable, "-c", KILLER, path, str(space_id), step], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    conn = db.connect(path)
    after = ivf.live(conn, space_id).tolist()
    assert sorted(after) == before and len(after) == len(set(after))   # none lost, none twice
    chunks = chunk_of(conn)
    for q in clustered(10, seed=3):
        ids, _ = ivf.Reader(conn, space_id, scan=10**9).nearest(q, 10)   # every list: exact
        assert {chunks[i] for i in ids.tolist()} == exact_top(stored, q)
    ivf.maintain(conn, space_id, tx(conn))                              # and it can go on
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (f"ivf_{space_id}_old",)).fetchall()
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    assert sorted(ivf.live(conn, space_id).tolist()) == before
    conn.close()


def _fine_inline(conn, space_id):
    """The index as versions before 2026-12-07 kept it: each list's fine codes in its own row, no fine table."""
    t = ivf.names(space_id)
    with conn:
        for lst, fine in conn.execute(f"SELECT list, fine FROM {t['fine']}").fetchall():
            conn.execute(f"UPDATE {t['lists']} SET fine = ? WHERE list = ?", (fine, lst))
        conn.execute(f"DROP TABLE {t['fine']}")


def _answers(conn, space_id, chunks):
    """What the index answers: nearest chunks and similarities of a few queries, and every vector decoded."""
    found = [tuple(np.round(a, 6).tolist()) for q in clustered(8, seed=3)
             for a in ivf.Reader(conn, space_id, scan=500).nearest(q, 20)]
    back = ivf.vectors_of(conn, space_id, list(chunks))
    return found, {c: back[c].tobytes() for c in chunks}


def test_fine_codes_kept_in_their_lists_rows_are_read_there_and_moved_apart_a_list_at_a_time(tmp_path):
    """An index made before 2026-12-07 keeps each list's fine codes at the end of its row: it answers as
    it did, and ``maintain`` moves them to the fine table a list a transaction. Killed after the third
    list, the index is half in each layout and answers the same; the next ``maintain`` finishes."""
    path = str(tmp_path / "journal.db")
    conn = db.connect(path)
    space_id, _ = fill(conn, ["s1", "s2"], 1500)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    chunks = chunk_of(conn)
    before = _answers(conn, space_id, chunks)
    assert conn.execute(f"SELECT count(*), sum(length(fine)) FROM ivf_{space_id}_lists").fetchall() == [(16, 0)]
    _fine_inline(conn, space_id)
    assert _answers(conn, space_id, chunks) == before
    conn.close()
    env = {**os.environ, ENV: "mid-separate@3", "PYTHONPATH": ROOT}
    killed = subprocess.run([sys.executable, "-c", KILLER, path, str(space_id), "separate"], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr
    conn = db.connect(path)
    inline = conn.execute(f"SELECT count(*) FROM ivf_{space_id}_lists WHERE length(fine) > 0").fetchall()[0][0]
    assert inline == 13
    assert _answers(conn, space_id, chunks) == before
    ivf.maintain(conn, space_id, tx(conn))
    assert conn.execute(f"SELECT count(*) FROM ivf_{space_id}_lists WHERE length(fine) > 0").fetchall()[0][0] == 0
    assert conn.execute(f"SELECT count(*) FROM ivf_{space_id}_fine").fetchall()[0][0] == 16
    assert _answers(conn, space_id, chunks) == before
    stored = fill(conn, ["s3"], 100, seed=9)[1]    # and it goes on: a fold, a purge's zeroing, a retrain
    ivf.fold(conn, space_id, tx(conn))
    gone = [c for c, m in chunk_of(conn).items() if m in stored]
    with conn:
        conn.execute("DELETE FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 's3')")
        assert vectors.zero_deleted(conn) == len(gone)
    assert _answers(conn, space_id, chunks) == before
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    assert sorted(ivf.live(conn, space_id).tolist()) == sorted(chunks)
    assert not conn.execute("SELECT name FROM sqlite_master WHERE name LIKE ?", (f"ivf_{space_id}_%old%",)).fetchall()
    conn.close()


def test_a_retrain_does_not_hold_the_lists_it_replaces_in_memory(conn):
    """The old lists are dropped after the swap's commit: dropped inside it, SQLite kept every page of them
    in memory for the statement's rollback (the journal's temp store is memory), as many bytes as the index
    (a sync's peak at 1M: BENCHMARKS.md, session 25). Measured by SQLite's own high-water mark, its page
    cache made small."""
    space_id, _ = fill(conn, [f"s{i}" for i in range(4)], 10_000)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    lists = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name IN (?, ?)",
                         (f"ivf_{space_id}_lists", f"ivf_{space_id}_fine")).fetchall()[0][0]
    assert lists > 2_000_000
    conn.execute("PRAGMA cache_size = -64")
    apsw.memory_high_water(True)
    ivf.retrain(conn, space_id, tx(conn), nlist=32)
    assert apsw.memory_high_water() < lists, (apsw.memory_high_water(), lists)   # 1.9 MB; 3.2 MB dropped inside


def test_purge_leaves_no_vector_of_the_session_on_disk():
    with Journal.open() as journal:
        space_id, _ = fill(journal.conn, ["sess-purged", "sess-kept"], 1200)
        ivf.retrain(journal.conn, space_id, tx(journal.conn), nlist=16)
        chunks = chunk_of(journal.conn)
        session = dict(journal.conn.execute("SELECT m.id, n.session_id FROM messages m JOIN session_numbers n "
                                            "ON n.number = m.session").fetchall())
        purged = [c for c, m in chunks.items() if session[m] == "sess-purged"]
        kept = [c for c, m in chunks.items() if session[m] == "sess-kept"]
        purged_codes = [b for b in stored_codes(journal.conn, space_id, purged) if any(b)]
        kept_codes = [b for b in stored_codes(journal.conn, space_id, kept, fine=False)]
    assert len(purged_codes) >= len(purged)
    chats("purge", "--session", "sess-purged", "--yes")
    data = b"".join(open(p, "rb").read() for p in (paths.journal_path(), paths.journal_path() + "-wal")
                    if os.path.exists(p))
    assert [c for c in purged_codes if c in data] == []
    # the search is meaningful: the kept vectors' codes are found (but those a page boundary splits)
    assert sum(c in data for c in kept_codes) >= 0.9 * len(kept_codes)
    with Journal.open() as journal:
        assert sorted(ivf.live(journal.conn, space_id).tolist()) == sorted(kept)


def test_a_purge_leaves_no_vector_of_the_tail_on_disk_nor_in_its_scan_index():
    """Vectors not folded yet lie in the tail twice: its rows, and the index a search scans it by (coarse
    codes by list). A purge leaves neither on disk."""
    with Journal.open() as journal:
        space_id, _ = fill(journal.conn, ["sess-kept"], 1200)
        ivf.retrain(journal.conn, space_id, tx(journal.conn), nlist=16)
        journal.conn.execute("INSERT INTO sessions(id, updated_at) VALUES ('sess-purged', '2026-01-01')")
        add_late(journal.conn, space_id, "sess-purged", clustered(300, seed=8))
        chunks, session = chunk_of(journal.conn), dict(journal.conn.execute(
            "SELECT m.id, n.session_id FROM messages m JOIN session_numbers n ON n.number = m.session"))
        purged = [c for c, m in chunks.items() if session[m] == "sess-purged"]
        assert ivf.counts(journal.conn, space_id) == (1200, 300)
        plan = journal.conn.execute(f"EXPLAIN QUERY PLAN SELECT id, scale, codes FROM ivf_{space_id}_tail "
                                    "WHERE list IN (1, 2)").fetchall()
        assert "USING PRIMARY KEY (list=?)" in str(plan)   # rows in order of list, no second copy of the codes
        purged_codes = [b for b in stored_codes(journal.conn, space_id, purged) if any(b)]
    assert len(purged_codes) == 2 * len(purged)
    chats("purge", "--session", "sess-purged", "--yes")
    data = b"".join(open(p, "rb").read() for p in (paths.journal_path(), paths.journal_path() + "-wal")
                    if os.path.exists(p))
    assert [c for c in purged_codes if c in data] == []


def _rowid_tail(conn, space_id):
    """The space's tail as versions before 2026-12-06 made it: a rowid table and an index of the list."""
    tail = f"ivf_{space_id}_tail"
    conn.execute(f"DROP TABLE {tail}; CREATE TABLE {tail} (id INTEGER PRIMARY KEY, list INTEGER NOT NULL, "
                 f"scale REAL NOT NULL, codes BLOB NOT NULL, fine BLOB NOT NULL); CREATE INDEX {tail}_list ON {tail}(list)")


def _index_names(conn):
    return {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}


def test_a_space_made_before_the_tail_in_list_order_is_scanned_by_index_then_made_anew_by_a_fold(conn):
    """A rowid tail's rows were found through an index of the list alone, one page each: a space made then
    gets the scan index when a sync prepares it; the first fold that empties the tail makes it anew in order
    of list, without either index. Searches answer the same all along."""
    space_id, stored = fill(conn, ["s1"], 3000)
    ivf.retrain(conn, space_id, tx(conn), nlist=32)
    assert ivf.tail_in_list_order(conn, space_id)
    _rowid_tail(conn, space_id)
    assert not ivf.tail_in_list_order(conn, space_id)
    add_late(conn, space_id, "s1", clustered(400, seed=9))
    reader = ivf.Reader(conn, space_id)
    queries = clustered(10, seed=10)
    before = [reader.nearest(q, 20) for q in queries]
    provider = HashEmbedder()
    vectors.LocalVectors(conn).prepare(provider.space, canary_vector(provider))
    assert {f"ivf_{space_id}_tail_scan", f"ivf_{space_id}_tail_list"} <= _index_names(conn)

    def same_answers():
        for q, (ids, sims) in zip(queries, before):
            again, again_sims = ivf.Reader(conn, space_id).nearest(q, 20)
            assert again.tolist() == ids.tolist()
            np.testing.assert_array_equal(again_sims, sims)
    same_answers()
    ivf.fold(conn, space_id, tx(conn))
    assert ivf.tail_in_list_order(conn, space_id) and ivf.counts(conn, space_id) == (3400, 0)
    assert not {f"ivf_{space_id}_tail_scan", f"ivf_{space_id}_tail_list"} & _index_names(conn)
    same_answers()
    # the tail made anew takes chunks as before, and a chunk deleted leaves it
    conn.execute("INSERT INTO sessions(id, updated_at) VALUES ('s2', '2026-01-01')")
    extra = add_late(conn, space_id, "s2", clustered(30, seed=11), name="after")
    assert ivf.counts(conn, space_id) == (3400, 30)
    (gone,), = conn.execute("SELECT id FROM chunks WHERE message_id = ?", (next(iter(extra)),)).fetchall()
    conn.execute("DELETE FROM chunks WHERE id = ?", (gone,))
    assert ivf.counts(conn, space_id) == (3400, 29)
    assert gone not in ivf.live(conn, space_id).tolist()


def test_two_spaces_never_mix_in_the_index(conn):
    first, stored = fill(conn, ["s1"], 600)
    provider = HashEmbedder()
    other = vectors.ensure_space(conn, provider.space.__class__(provider.space.provider, "other-model", 48, {}),
                                 np.ones(48, np.float32) / np.sqrt(48))
    assert other != first
    wide = clustered(600, seed=8, dims=48)
    with conn:
        for (message,), v in zip(conn.execute("SELECT id FROM messages ORDER BY id").fetchall(), wide):
            conn.execute("INSERT INTO chunks(space_id, message_id, chunk_index, start_char, end_char) "
                         "VALUES (?, ?, 1, 0, 4)", (other, message))
            ivf.add(conn, other, [conn.last_insert_rowid()], v[None, :])
    ivf.retrain(conn, first, tx(conn), nlist=8)
    first_chunks = {c for (c,) in conn.execute("SELECT id FROM chunks WHERE space_id = ?", (first,))}
    other_chunks = {c for (c,) in conn.execute("SELECT id FROM chunks WHERE space_id = ?", (other,))}
    assert set(ivf.live(conn, first).tolist()) == first_chunks
    assert set(ivf.live(conn, other).tolist()) == other_chunks
    ids, _ = ivf.Reader(conn, other).nearest(wide[0], 20)
    assert set(ids.tolist()) <= other_chunks
    ids, _ = ivf.Reader(conn, first).nearest(list(stored.values())[0], 20)
    assert set(ids.tolist()) <= first_chunks
    with pytest.raises(ValueError):   # a query of the wrong width is refused, never compared
        ivf.Reader(conn, first).nearest(wide[0], 5)


def legacy_journal(conn, stored_vectors):
    """A journal as versions before the index wrote it: the space's vectors in a sqlite-vec vec0 table."""
    provider = HashEmbedder()
    vectors.load_extension(conn)
    with conn:
        conn.execute("INSERT INTO spaces(key, provider, model, dimensions, options, canary, created_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, '2026-01-01')",
                     (provider.space.key, provider.space.provider, provider.space.model, DIMS,
                      provider.space.options_json, canary_vector(provider).astype(np.float32).tobytes()))
        space_id = conn.last_insert_rowid()
        conn.execute(f"CREATE VIRTUAL TABLE vec_{space_id} USING vec0(embedding float[{DIMS}] distance_metric=cosine)")
        conn.execute(f"CREATE TRIGGER vec_{space_id}_chunk_delete AFTER DELETE ON chunks WHEN old.space_id = "
                     f"{space_id} BEGIN DELETE FROM vec_{space_id} WHERE rowid = old.id; END")
        conn.execute("INSERT INTO sessions(id, updated_at) VALUES ('s1', '2026-01-01')")
        for seq, v in enumerate(stored_vectors):
            conn.execute("INSERT INTO messages(uuid, session, seq, role, kind, content, synced) "
                         "VALUES (?, ?, ?, 'user', 'text', 'old', 1)", (f"u{seq}", writer.session_number(conn, "s1"), seq))
            conn.execute("INSERT INTO chunks(space_id, message_id, chunk_index, start_char, end_char) "
                         "VALUES (?, ?, 0, 0, 3)", (space_id, conn.last_insert_rowid()))
            conn.execute(f"INSERT INTO vec_{space_id}(rowid, embedding) VALUES (?, ?)",
                         (conn.last_insert_rowid(), v.tobytes()))
    return space_id


def test_a_journal_of_an_older_version_is_converted_and_searched_meanwhile(tmp_path):
    path = str(tmp_path / "journal.db")
    data = clustered(1200, seed=4)
    with Journal.open(path) as journal:
        space_id = legacy_journal(journal.conn, data)
        assert vectors.legacy(journal.conn, space_id) and not ivf.ready(journal.conn, space_id)
        q = clustered(1, seed=21)[0]
        copied = vectors.upgrade(journal.conn, space_id, tx(journal.conn), batch=500)
        assert copied == 1200
        assert ivf.ready(journal.conn, space_id) and not vectors.legacy(journal.conn, space_id)
        chunks = chunk_of(journal.conn)
        stored = {chunks[c]: data[n] for n, c in enumerate(sorted(chunks))}
        ids, _ = ivf.Reader(journal.conn, space_id).nearest(q, 10)
        assert {chunks[i] for i in ids.tolist()} == exact_top(stored, q)
        assert vectors.upgrade(journal.conn, space_id, tx(journal.conn)) == 0   # done once


def test_an_index_that_is_gone_is_rebuilt_by_embedding_again(conn):
    space_id, _ = fill(conn, ["s1"], 200)
    with conn:
        ivf.drop(conn, space_id)
    assert not ivf.ready(conn, space_id) and not vectors.legacy(conn, space_id)
    lost = vectors.repair(conn, space_id, tx(conn))
    assert lost == 200
    assert ivf.ready(conn, space_id)
    assert conn.execute("SELECT count(*) FROM chunks WHERE space_id = ?", (space_id,)).fetchall()[0][0] == 0
    assert vectors.count_unembedded(conn, space_id) == 200     # sync embeds them again


def test_slots_naming_no_chunk_are_never_answered(conn):
    space_id, stored = fill(conn, ["s1"], 300)
    ivf.retrain(conn, space_id, tx(conn), nlist=4)
    (size,) = conn.execute(f"SELECT length(ids) FROM ivf_{space_id}_lists WHERE list = 0").fetchall()[0]
    with conn:   # a list whose ids name chunks that do not exist (a bug, or a hand-edited journal)
        conn.execute(f"UPDATE ivf_{space_id}_lists SET ids = ? WHERE list = 0",
                     (np.arange(10**9, 10**9 + size // 8, dtype=np.int64).tobytes(),))
    query = list(stored.values())[0]
    hits = vectors.knn(conn, space_id, query, k=10)
    assert hits and all(h[0] in stored for h in hits)


def test_a_search_reads_one_state_of_the_index_and_leaves_no_transaction_open(tmp_path):
    """``nearest`` reads the lists and their fine codes in one read transaction: a fold committed by another
    connection meanwhile is not seen half-way; the connection is back in autocommit after, and a caller's own
    transaction is left to the caller."""
    path = str(tmp_path / "journal.db")
    conn = db.connect(path)
    space_id, stored = fill(conn, ["s1"], 3000)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    stored.update(add_late(conn, space_id, "s1", clustered(300, seed=4)))
    reader_conn = db.connect(path, readonly=True)
    reader, chunks, q = ivf.Reader(reader_conn, space_id, scan=10**9), chunk_of(conn), clustered(1, seed=8)[0]
    before, _ = reader.nearest(q, 10)
    assert not reader_conn.in_transaction
    reader_conn.execute("BEGIN")
    reader.nearest(q, 10)                                   # the caller's snapshot: taken here
    ivf.fold(conn, space_id, tx(conn))                      # another connection rewrites every list
    assert reader_conn.in_transaction
    inside, _ = reader.nearest(q, 10)                       # still the state before the fold, whole
    reader_conn.execute("COMMIT")
    after, _ = reader.nearest(q, 10)
    assert before.tolist() == inside.tolist() == after.tolist()
    assert {chunks[i] for i in after.tolist()} == exact_top(stored, q)


def test_chunks_of_one_vector_are_answered_in_the_order_of_their_ids(conn):
    """Equal scores (the same vector stored for several chunks) come in the order of the chunks' ids, whatever
    order the scan found them in: the answer does not depend on how the candidates were picked."""
    space_id, _ = fill(conn, ["s1"], 600)
    ivf.retrain(conn, space_id, tx(conn), nlist=8)
    twin = clustered(1, seed=21)[0]
    late = add_late(conn, space_id, "s1", np.stack([twin] * 5))
    ivf.fold(conn, space_id, tx(conn))
    chunks = {m: c for c, m in chunk_of(conn).items()}
    ids, sims = ivf.Reader(conn, space_id).nearest(twin, 5)
    assert ids.tolist() == sorted(chunks[m] for m in late)
    assert len(set(sims.tolist())) == 1
