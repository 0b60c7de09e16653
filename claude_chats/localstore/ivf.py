"""The journal's vector index of one space: an inverted file (IVF) kept in SQLite tables.

A searching process opens it in milliseconds and reads only the lists it probes: nothing is
loaded per process (the in-memory index it replaces read every vector of the space, 25 s and
5 GB at a million messages). Measured against faiss, usearch, hnswlib and sqlite-vec in
``docs/vector-index.md``.

Tables of space ``n`` (created with the space, see ``vectors``):

* ``ivf_<n>_lists(list, ids, scales, codes, fine)``: one row per list; blobs of its chunk ids
  (int64, 0 = a deleted slot), scales (float32), coarse codes (int8, ``d`` each) and, in an index made
  before 2026-12-07 until ``separate`` moves them, its fine codes (``codes.Codec``: ``d / 2`` bytes each,
  ``d`` in an index made before 2026-12-05); empty once they are in ``ivf_<n>_fine``.
* ``ivf_<n>_fine(list, fine)``: the fine codes of each list whose own ``fine`` is empty (``fine_table``).
  Kept apart so that reading a candidate's few fine bytes does not walk the list's coarse codes first:
  the last column of a list's row begins some 400 KB into it at 1M, and SQLite reaches an offset of a
  blob by following its overflow pages from the first (110 us a list against 9-12 apart: 2 ms of a
  search re-ranking candidates from 20 lists).
* ``ivf_<n>_tail(list, id, scale, codes, fine)``: chunks added since the lists were last
  rewritten, one row each (``chats sync`` appends here; ``maintain`` folds it into the lists), kept
  in order of list (``WITHOUT ROWID``, ``TAIL_TABLE``): a search reads the rows of the lists it probes
  from a few consecutive pages. A tail made before 2026-12-06 (a rowid table, with an index of the
  list and one a search scans it by, ``_create_scan_index``) is made anew when a fold empties it.
* ``ivf_<n>_meta(key, value)``: the centroids (float32), the count they were trained at, the
  dimensions and the fine codes' format (``fine_bits``).
* ``ivf_<n>_dead(id)``: chunks deleted whose bytes may still be in a list's blobs (a trigger on
  ``chunks`` fills it; ``zero_dead`` overwrites their slots with zeros, in place).

A vector is stored as a scale, coarse codes and fine codes (``codes``: 1.5 x ``d`` + 12 bytes,
within ``s / 32`` of every component). The probed lists are scanned by the coarse codes, the best
candidates re-ranked by the fine ones.

Every change is a short SQLite transaction (the hook waits for none longer than one list's
rewrite), so a kill at any moment leaves either the old or the new state; a retrain builds its
lists in a new table and swaps it in in one transaction.
"""

import json

import apsw
import numpy as np
import simsimd

from .. import faults
from . import ivfscan
from .codes import FINE_BITS, Codec
from .db import Snapshot

TRAIN_AT = 16_384        # chunks from which the space gets k-means lists (below: one list, scanned whole)
RETRAIN_GROWTH = 4       # retrain when the space has grown this many times since the last training
SCAN_TARGET = 49_152     # vectors a search scans at most: recall@10 0.991 at 1M (0.974 at 32,768)
SCAN_SHARE = 0.05        # ... or this share of the space, at least SCAN_MIN (recall@10 0.979 at 100k with 20,480)
SCAN_MIN = 24_576
MIN_PROBE = 8
RERANK_SHARE = 4         # candidates re-ranked by the fine codes: the ask and a quarter more, at least RERANK_MIN
RERANK_MIN = 50          # more (twice the ask before 2026-12-06: the same top 640 for 52 real queries at 1M)
TAIL_MIN = 2_048         # the tail is folded into the lists above this many rows, or 1/TAIL_SHARE of the space
TAIL_SHARE = 64          # a search reads its tail rows through SQL: 1.5 us a row against 0.2 in a list
BUSY_TAIL_SHARE = 16     # ... while a sync is still embedding (a fold rewrites every list: 6.6 s at 1M)
KMEANS_SAMPLE = 40       # vectors sampled per list to train
KMEANS_ROUNDS = 8
ROW_BATCH = 20_000
PASS_BYTES = 192 << 20   # what a retrain gathers in memory per pass over the old lists


def names(space_id):
    n = int(space_id)
    return {"lists": f"ivf_{n}_lists", "tail": f"ivf_{n}_tail", "meta": f"ivf_{n}_meta",
            "dead": f"ivf_{n}_dead", "next": f"ivf_{n}_next", "old": f"ivf_{n}_old",
            "fine": f"ivf_{n}_fine", "next_fine": f"ivf_{n}_next_fine", "old_fine": f"ivf_{n}_old_fine"}


FINE_TABLE = "CREATE TABLE IF NOT EXISTS {fine} (list INTEGER PRIMARY KEY, fine BLOB NOT NULL)"
APART = "(length(ids) > 0 AND length(fine) = 0)"   # a list row whose fine codes are in ``ivf_<n>_fine``


def exists(conn, space_id):
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                             (names(space_id)["lists"],)).fetchall())


def create(conn, space_id):
    """The space's index tables and the trigger that marks deleted chunks (inside the caller's transaction)."""
    t = names(space_id)
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {t['lists']} (list INTEGER PRIMARY KEY, ids BLOB NOT NULL, "
        f"scales BLOB NOT NULL, codes BLOB NOT NULL, fine BLOB NOT NULL);"
        f"{TAIL_TABLE.format(tail=t['tail'])};"
        f"{FINE_TABLE.format(fine=t['fine'])};"
        f"CREATE TABLE IF NOT EXISTS {t['meta']} (key TEXT PRIMARY KEY, value);"
        f"CREATE TABLE IF NOT EXISTS {t['dead']} (id INTEGER PRIMARY KEY);"
        f"CREATE TRIGGER IF NOT EXISTS ivf_{int(space_id)}_chunk_delete AFTER DELETE ON chunks "
        f"WHEN old.space_id = {int(space_id)} BEGIN INSERT OR IGNORE INTO {t['dead']}(id) SELECT old.id "
        f"WHERE NOT EXISTS (SELECT 1 FROM {t['tail']} WHERE id = old.id); "
        f"DELETE FROM {t['tail']} WHERE id = old.id; END;")


# The tail in order of list, the row its own index entry: a search's rows of a list are consecutive
# (read through an index of the list alone, they came one page each from all over a rowid table: 6.6 ms
# of a 27 ms vector leg at 1M, with 72,703 rows not folded yet), and no second copy of the codes is
# kept for it (the covering index a rowid tail needed took 35 bytes a message at 1M). ``id`` is unique:
# a chunk is in one list at most, and found by id through that index (deletes, the fine codes).
TAIL_TABLE = ("CREATE TABLE IF NOT EXISTS {tail} (list INTEGER NOT NULL, id INTEGER NOT NULL UNIQUE, "
              "scale REAL NOT NULL, codes BLOB NOT NULL, fine BLOB NOT NULL, PRIMARY KEY (list, id)) "
              "WITHOUT ROWID")


def tail_in_list_order(conn, space_id):
    """Whether the space's tail is kept in order of list (``TAIL_TABLE``), not in a rowid table of before."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                       (names(space_id)["tail"],)).fetchall()
    return bool(sql) and "WITHOUT ROWID" in sql[0][0].upper()


def ensure_scan_index(conn, space_id, transaction):
    """A rowid tail's index a search scans it by (its rows by list, each with its coarse codes), made in a
    ``transaction()`` when missing (a space made before 2026-12-05, until a fold makes its tail anew in
    order of list: ``TAIL_TABLE``). ``LocalVectors.prepare`` calls it at every sync."""
    t = names(space_id)
    if tail_in_list_order(conn, space_id):
        return
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                        (f"{t['tail']}_scan",)).fetchall():
        with transaction():
            _create_scan_index(conn, t)


def _create_scan_index(conn, t):
    conn.execute(f"CREATE INDEX IF NOT EXISTS {t['tail']}_scan ON {t['tail']}(list, id, scale, codes)")


def codec(conn, space_id):
    """The ``Codec`` of the space's index (its dimensions and its fine codes' format)."""
    meta = dict(conn.execute(f"SELECT key, value FROM {names(space_id)['meta']} "
                             f"WHERE key IN ('dimensions', 'fine_bits')").fetchall())
    return Codec(int(meta["dimensions"]), int(meta.get("fine_bits", 8)))


# -- writing ----------------------------------------------------------------------------------


def fine_table(conn, t, lst):
    """The table holding list ``lst``'s fine codes (``t``: ``names``): ``ivf_<n>_fine`` once they are apart
    (the list's own ``fine`` empty while it has slots), else the lists' table."""
    row = conn.execute(f"SELECT {APART} FROM {t['lists']} WHERE list = ?", (lst,)).fetchall()
    return t["fine"] if row and row[0][0] else t["lists"]


def list_row(conn, t, lst):
    """``(ids, scales, codes, fine)`` blobs of list ``lst``, its fine codes read where they are; None: no such list."""
    row = conn.execute(f"SELECT ids, scales, codes, fine FROM {t['lists']} WHERE list = ?", (lst,)).fetchall()
    if not row:
        return None
    ids, scales, codes, fine = row[0]
    if ids and not fine:
        fine = conn.execute(f"SELECT fine FROM {t['fine']} WHERE list = ?", (lst,)).fetchall()[0][0]
    return ids, scales, codes, fine


def centroids(conn, space_id):
    rows = conn.execute(f"SELECT value FROM {names(space_id)['meta']} WHERE key = 'centroids'").fetchall()
    if not rows or rows[0][0] is None:
        return None
    dims = conn.execute(f"SELECT value FROM {names(space_id)['meta']} WHERE key = 'dimensions'").fetchall()[0][0]
    return np.frombuffer(rows[0][0], dtype=np.float32).reshape(-1, int(dims))


def assign(cents, vectors):
    if cents is None:
        return np.zeros(len(vectors), np.int64)
    x = np.asarray(vectors, dtype=np.float32)
    return np.concatenate([np.argmax(x[i:i + 50_000] @ cents.T, axis=1) for i in range(0, len(x), 50_000)]
                          ) if len(x) else np.zeros(0, np.int64)


def add(conn, space_id, chunk_ids, vectors):
    """Append chunks' vectors to the tail (inside the caller's transaction)."""
    if not len(chunk_ids):
        return
    lists = assign(centroids(conn, space_id), vectors)
    scales, codes, fine = codec(conn, space_id).encode(vectors)
    conn.executemany(
        f"INSERT OR REPLACE INTO {names(space_id)['tail']}(id, list, scale, codes, fine) VALUES (?, ?, ?, ?, ?)",
        [(int(i), int(l), float(s), c.tobytes(), f.tobytes())
         for i, l, s, c, f in zip(chunk_ids, lists, scales, codes, fine)])


def zero_dead(conn, space_id):
    """Overwrite, in place, the list slots of chunks deleted since the last call; returns how many.

    Called by purge (before its checkpoint), after sync replaces a message's vectors and by
    ``maintain``; until then a dead slot is never returned (search joins ``chunks``)."""
    t = names(space_id)
    dead = np.fromiter((r[0] for r in conn.execute(f"SELECT id FROM {t['dead']}")), np.int64)
    if not len(dead):
        return 0
    form = codec(conn, space_id)
    zeroed = 0
    for lst, ids_blob in conn.execute(f"SELECT list, ids FROM {t['lists']}").fetchall():
        ids = np.frombuffer(ids_blob, np.int64)
        slots = np.flatnonzero(np.isin(ids, dead))
        if not len(slots):
            continue
        fine = fine_table(conn, t, lst)
        for table, column, width in ((t["lists"], "ids", 8), (t["lists"], "scales", 4), (t["lists"], "codes", form.dims),
                                     (fine, "fine", form.fine_width)):
            with conn.blob_open("main", table, column, lst, True) as blob:
                for slot in slots.tolist():
                    blob.seek(slot * width)
                    blob.write(bytes(width))
        zeroed += len(slots)
    conn.executemany(f"DELETE FROM {t['dead']} WHERE id = ?", [(int(i),) for i in dead])
    return zeroed


def set_dimensions(conn, space_id, dimensions, fine_bits=FINE_BITS):
    """The dimensions and the fine codes' format of an index being made (an index that has its
    dimensions already keeps them and its format: a conversion run again after a kill)."""
    meta = names(space_id)["meta"]
    if conn.execute(f"SELECT 1 FROM {meta} WHERE key = 'dimensions'").fetchall():
        return
    Codec(dimensions, fine_bits)   # a format this version reads
    conn.execute(f"INSERT INTO {meta}(key, value) VALUES ('dimensions', ?), ('fine_bits', ?)",
                 (int(dimensions), int(fine_bits)))


def mark_ready(conn, space_id):
    """The index holds every vector of the space (a new space, or a legacy table fully converted)."""
    conn.execute(f"INSERT OR REPLACE INTO {names(space_id)['meta']}(key, value) VALUES ('ready', 1)")


def ready(conn, space_id):
    if not exists(conn, space_id):
        return False
    return bool(conn.execute(f"SELECT 1 FROM {names(space_id)['meta']} WHERE key = 'ready'").fetchall())


def counts(conn, space_id):
    """``(slots in the lists, live or dead; rows in the tail)``."""
    t = names(space_id)
    return conn.execute(f"SELECT (SELECT coalesce(sum(length(ids)), 0) / 8 FROM {t['lists']}), "
                        f"(SELECT count(*) FROM {t['tail']})").fetchall()[0]


def live(conn, space_id):
    """Chunk ids whose vectors the index holds (lists' live slots and the tail), as a numpy array."""
    t = names(space_id)
    parts = [np.frombuffer(ids, np.int64) for (ids,) in conn.execute(f"SELECT ids FROM {t['lists']}")]
    parts.append(np.fromiter((r[0] for r in conn.execute(f"SELECT id FROM {t['tail']}")), np.int64))
    ids = np.concatenate(parts)
    return ids[ids != 0]


# -- maintenance (chats sync) --------------------------------------------------------------------


def maintain(conn, space_id, transaction, progress=None, tail_share=TAIL_SHARE):
    """Zero dead slots, retrain the lists when the space outgrew them, fold the tail into them once it
    holds ``1 / tail_share`` of the space (``BUSY_TAIL_SHARE`` between a sync's batches, so that a
    year's backlog is not folded 89 times; ``TAIL_SHARE`` when the sync is done).

    ``transaction`` is a context factory for one short write transaction (``db.Immediate``-like).
    Returns what it did: ``"retrained"``, ``"folded"`` or None."""
    drop_old(conn, space_id)
    with transaction():
        zero_dead(conn, space_id)
    listed, tail = counts(conn, space_id)
    total = listed + tail
    trained = conn.execute(f"SELECT value FROM {names(space_id)['meta']} WHERE key = 'trained'").fetchall()
    trained = int(trained[0][0]) if trained else 0
    if (not trained and total >= TRAIN_AT) or (trained and total >= RETRAIN_GROWTH * trained):
        retrain(conn, space_id, transaction, progress)
        return "retrained"
    separate(conn, space_id, transaction)
    if tail >= max(TAIL_MIN, total // tail_share):
        fold(conn, space_id, transaction)
        return "folded"
    return None


def fold(conn, space_id, transaction):
    """Move the tail into the lists: one transaction per list."""
    t = names(space_id)
    for (lst,) in conn.execute(f"SELECT DISTINCT list FROM {t['tail']}").fetchall():
        with transaction():
            rows = conn.execute(f"SELECT id, scale, codes, fine FROM {t['tail']} WHERE list = ? ORDER BY id",
                                (lst,)).fetchall()
            if not rows:
                continue
            old = list_row(conn, t, lst)
            ids = np.array([r[0] for r in rows], np.int64).tobytes()
            scales = np.array([r[1] for r in rows], np.float32).tobytes()
            codes = b"".join(r[2] for r in rows)
            fine = b"".join(r[3] for r in rows)
            if old:
                ids, scales, codes, fine = (a + b for a, b in zip(old, (ids, scales, codes, fine)))
            _write_list(conn, t["lists"], t["fine"], lst, ids, scales, codes, fine)
            conn.execute(f"DELETE FROM {t['tail']} WHERE list = ?", (lst,))
        faults.point("mid-fold")
    if not tail_in_list_order(conn, space_id):
        with transaction():
            if not conn.execute(f"SELECT 1 FROM {t['tail']} LIMIT 1").fetchall():   # (empty: nothing to copy)
                conn.execute(f"DROP TABLE {t['tail']}; {TAIL_TABLE.format(tail=t['tail'])}")


def _write_list(conn, lists, fine_table, lst, ids, scales, codes, fine):
    """List ``lst`` written whole: its ids, scales and coarse codes in ``lists``, its fine codes apart."""
    conn.execute(FINE_TABLE.format(fine=fine_table))   # (an index made before 2026-12-07 has none yet)
    conn.execute(f"INSERT OR REPLACE INTO {lists}(list, ids, scales, codes, fine) VALUES (?, ?, ?, ?, x'')",
                 (lst, ids, scales, codes))
    conn.execute(f"INSERT OR REPLACE INTO {fine_table}(list, fine) VALUES (?, ?)", (lst, fine))


def separate(conn, space_id, transaction):
    """Move the fine codes of the lists that still hold them (an index made before 2026-12-07) to
    ``ivf_<n>_fine``, a list a transaction (a kill leaves each list whole in one place or the other);
    returns how many lists moved."""
    t = names(space_id)
    inline = [lst for (lst,) in conn.execute(f"SELECT list FROM {t['lists']} WHERE length(fine) > 0").fetchall()]
    for lst in inline:
        with transaction():
            row = list_row(conn, t, lst)
            if row is not None:
                _write_list(conn, t["lists"], t["fine"], lst, *row)
        faults.point("mid-separate")
    return len(inline)


def _every_vector(conn, space_id):
    """``(ids, scales, codes, fine)`` batches of every live vector of the space (lists, then tail)."""
    t = names(space_id)
    form = codec(conn, space_id)
    for (lst,) in conn.execute(f"SELECT list FROM {t['lists']} ORDER BY list").fetchall():
        row = list_row(conn, t, lst)
        if row is None:
            continue
        ids, scales, codes, fine = row
        ids = np.frombuffer(ids, np.int64)
        live = ids != 0
        yield (ids[live], np.frombuffer(scales, np.float32)[live], form.codes_rows(codes)[live],
               form.fine_rows(fine)[live])
    after = -1
    while True:
        rows = conn.execute(f"SELECT id, scale, codes, fine FROM {t['tail']} WHERE id > ? ORDER BY id LIMIT ?",
                            (after, ROW_BATCH)).fetchall()
        if not rows:
            return
        after = rows[-1][0]
        yield (np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.float32),
               form.codes_rows(b"".join(r[2] for r in rows)), form.fine_rows(b"".join(r[3] for r in rows)))


def train(sample, nlist, seed=2):
    """Spherical k-means centroids (float32) of ``sample`` (unit rows)."""
    rng = np.random.default_rng(seed)
    cents = sample[rng.choice(len(sample), nlist, replace=False)].copy()
    for _ in range(KMEANS_ROUNDS):
        nearest = np.argmax(sample @ cents.T, axis=1)
        sums = np.zeros_like(cents)
        np.add.at(sums, nearest, sample)
        empty = np.linalg.norm(sums, axis=1) == 0
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()))]
        cents = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    return cents.astype(np.float32)


def list_count(total):
    """Lists for a space of ``total`` vectors: about sqrt(total), a power of two (1,024 at 1M)."""
    return int(2 ** max(4, round(np.log2(max(total, 1)) / 2)))


def retrain(conn, space_id, transaction, progress=None, nlist=None):
    """New centroids from a sample, every vector reassigned: built in a new table, swapped in one
    transaction. A chunk deleted meanwhile is in the dead table and zeroed right after the swap."""
    t = names(space_id)
    listed, tail = counts(conn, space_id)
    total = listed + tail
    nlist = nlist or list_count(total)
    form = codec(conn, space_id)
    rng = np.random.default_rng(1)
    keep = min(1.0, KMEANS_SAMPLE * nlist / max(total, 1))
    sample = [form.decode(s[pick], c[pick], f[pick]) for ids, s, c, f in _every_vector(conn, space_id)
              for pick in [rng.random(len(ids)) < keep]]
    sample = np.concatenate(sample) if sample else np.zeros((0, form.dims), np.float32)
    if len(sample) < nlist:
        return
    sample /= np.maximum(np.linalg.norm(sample, axis=1, keepdims=True), 1e-12)
    cents = train(sample, nlist)
    # every vector's new list, by chunk id (16 bytes a vector: 16 MB at a million)
    ids_seen, lists_seen = [], []
    for ids, scales, codes, fine in _every_vector(conn, space_id):
        ids_seen.append(ids)
        lists_seen.append(assign(cents, form.decode(scales, codes, fine)))
    ids_seen = np.concatenate(ids_seen) if ids_seen else np.zeros(0, np.int64)
    lists_seen = np.concatenate(lists_seen) if lists_seen else np.zeros(0, np.int64)
    order = np.argsort(ids_seen)
    ids_seen, lists_seen = ids_seen[order], lists_seen[order]
    with transaction():
        conn.execute(f"DROP TABLE IF EXISTS {t['next']}; DROP TABLE IF EXISTS {t['next_fine']};"
                     f"CREATE TABLE {t['next']} (list INTEGER PRIMARY KEY, ids BLOB NOT NULL, scales BLOB NOT NULL, "
                     f"codes BLOB NOT NULL, fine BLOB NOT NULL)")
    # the new lists written a range at a time, each range gathered by one pass over the old lists: the
    # memory stays at about PASS_BYTES and the disk at twice the index (no copy of every row)
    ranges = max(1, int(np.ceil(len(ids_seen) * form.per_vector / PASS_BYTES)))
    bounds = np.linspace(0, nlist, ranges + 1).astype(int)
    done = 0
    for first, last in zip(bounds[:-1], bounds[1:]):
        gathered = {}
        for ids, scales, codes, fine in _every_vector(conn, space_id):
            at = np.searchsorted(ids_seen, ids)
            known = (at < len(ids_seen)) & (ids_seen[np.minimum(at, len(ids_seen) - 1)] == ids)
            lists = np.where(known, lists_seen[np.minimum(at, len(ids_seen) - 1)], -1)
            for lst in np.unique(lists[(lists >= first) & (lists < last)]).tolist():
                pick = lists == lst
                gathered.setdefault(lst, []).append((ids[pick], scales[pick], codes[pick], fine[pick]))
        for start in range(first, last, 64):
            with transaction():
                for lst in range(start, min(last, start + 64)):
                    parts = gathered.pop(lst, None)
                    if parts:
                        _write_list(conn, t["next"], t["next_fine"], lst,
                                    *(np.ascontiguousarray(np.concatenate([p[k] for p in parts])).tobytes()
                                      for k in range(4)))
                        done += sum(len(p[0]) for p in parts)
            faults.point("mid-retrain")
            if progress:
                progress(done, total)
    drop_old(conn, space_id)
    with transaction():
        conn.execute(f"ALTER TABLE {t['lists']} RENAME TO {t['old']}; ALTER TABLE {t['next']} RENAME TO {t['lists']};"
                     f"{FINE_TABLE.format(fine=t['fine'])}; {FINE_TABLE.format(fine=t['next_fine'])};"
                     f"ALTER TABLE {t['fine']} RENAME TO {t['old_fine']}; ALTER TABLE {t['next_fine']} RENAME TO {t['fine']};")
        seen = json.dumps(ids_seen.tolist())
        conn.execute(f"DELETE FROM {t['tail']} WHERE id IN (SELECT value FROM json_each(?))", (seen,))
        # a chunk deleted while the passes ran may have been gathered already: zeroed below, as the dead are
        conn.execute(f"INSERT OR IGNORE INTO {t['dead']}(id) SELECT value FROM json_each(?) "
                     f"WHERE value NOT IN (SELECT id FROM chunks WHERE space_id = ?)", (seen, space_id))
        conn.execute(f"INSERT OR REPLACE INTO {t['meta']}(key, value) VALUES ('centroids', ?), ('trained', ?)",
                     (cents.tobytes(), int(total)))
        # vectors the tail got meanwhile were assigned to the old centroids: reassign them
        rows = conn.execute(f"SELECT id, scale, codes, fine FROM {t['tail']}").fetchall()
        if rows:
            vectors = form.decode(np.array([r[1] for r in rows], np.float32),
                                  form.codes_rows(b"".join(r[2] for r in rows)), b"".join(r[3] for r in rows))
            conn.executemany(f"UPDATE {t['tail']} SET list = ? WHERE id = ?",
                             [(int(l), int(r[0])) for l, r in zip(assign(cents, vectors), rows)])
        zero_dead(conn, space_id)
    faults.point("before-drop-old")
    drop_old(conn, space_id)


def drop_old(conn, space_id):
    """Drop the lists a retrain replaced (``ivf_<n>_old``), in a statement of its own after the swap's
    commit: dropped inside the swap's transaction, every page of the old lists was kept in memory for the
    statement's own rollback (the journal's statements keep theirs in memory: ``db.connect``), about as
    many bytes as the index (BENCHMARKS.md, session 25). A kill between the two leaves the table to the
    next ``maintain``."""
    t = names(space_id)
    for old in (t["old"], t["old_fine"]):   # each in a statement of its own
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (old,)).fetchall():
            conn.execute(f"DROP TABLE IF EXISTS {old}")


# -- reading --------------------------------------------------------------------------------------


class Reader:
    """Searches one space's index through a connection; keeps the centroids until the journal changes."""

    def __init__(self, conn, space_id, scan=None):
        self.conn, self.space_id, self.t, self.scan = conn, int(space_id), names(space_id), scan
        self.version = None
        self.cents = None
        self.codec = None    # the index's dimensions and fine codes' format
        self.whole = False
        self.live = 0        # chunks the last search's probed lists held
        self.size = 0        # vectors in the index (live or dead), as of ``version``
        self._buffer = None  # a list's codes (``ivfscan.Buffer``)
        self._apart = {}     # list -> whether its fine codes are in ``ivf_<n>_fine`` (read by ``_scan``)

    def refresh(self, version):
        """Read the dimensions, centroids and size again when the journal changed (``version``) or when
        unknown. (The size took 1.5 ms of each search at 1M: a sum over the lists and a count of the tail.)"""
        if self.codec is None or version is None or version != self.version:
            self.codec = codec(self.conn, self.space_id)
            self.cents = centroids(self.conn, self.space_id)
            self.size = sum(counts(self.conn, self.space_id))
            self.version = version

    def nearest(self, query, count, version=None, widen=1, keep=None, partner=None):
        """``(chunk ids, similarities)`` of about the ``count`` nearest chunks, best first (cosine,
        within ~1e-5; the query need not be normalised). ``widen`` probes that many times more lists
        (a filtered search that found too few); ``self.whole`` says whether every list was read, and
        ``self.live`` how many chunks the probed lists held.

        ``keep(chunk ids) -> bool array``: which of the candidates a filter keeps, asked before the fine
        codes are read, so only those are re-ranked (and answered): a filter that keeps few reads few.
        One read transaction: the lists, the tail and the fine codes are of one state of the index.
        ``partner``: an ``ivfscan.Partner`` whose thread reads some of the lists beside this one, on a
        connection reading this very state (``db.Twin``)."""
        with Snapshot(self.conn):
            return self._nearest(query, count, version, widen, keep, partner)

    def _nearest(self, query, count, version, widen, keep=None, partner=None):
        self.refresh(version)
        q = np.asarray(query, dtype=np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        probe = self._probe(q, widen)
        self.whole = probe is None
        ids, scales, coarse, lists, slots = self._scan(probe, q, partner)
        if not len(ids):
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        dead = ids == 0
        self.live = len(ids) - int(np.count_nonzero(dead))
        rerank = count + max(count // RERANK_SHARE, RERANK_MIN)   # the coarse order is within ~1e-3: a margin
        if self.live > rerank:   # the best ``rerank``, all live: a dead slot scores -inf (0.4 against 1.1 ms at 70k)
            coarse[dead] = -np.inf
            pick = np.argpartition(coarse, len(coarse) - rerank)[len(coarse) - rerank:]
        else:
            pick = np.flatnonzero(~dead)
        if keep is not None and len(pick):
            pick = pick[np.asarray(keep(ids[pick]), bool)]
        fine = self._fine(pick, ids, lists, slots)
        exact = coarse[pick] + np.einsum("ij,j->i", self.codec.residual(fine), q) * scales[pick]
        order = np.lexsort((ids[pick], -exact))[:count]   # equal scores (a vector stored twice) by chunk id
        return ids[pick[order]], exact[order].astype(np.float32)

    def _scan(self, probe, q, partner=None):
        """The probed lists and the tail's rows in them, scored by their coarse codes: ``(ids, scales, coarse
        cosines, list, slot in it (-1 for the tail))``. Each list's blobs are read
        into arrays of the whole scan (its ids and scales) and a buffer of one list (its codes, scored and
        then overwritten by the next list's): about 19 MB of codes at 1M are never held at once, nor as
        one float32 matrix (75 MB). A ``partner`` reads some of the lists (``ivfscan``)."""
        chosen = "" if probe is None else f" WHERE list IN ({','.join(str(int(p)) for p in probe)})"
        sizes, self._apart = [], {}
        for lst, n, apart in self.conn.execute(
                f"SELECT list, length(ids) / 8, {APART} FROM {self.t['lists']}{chosen}"):
            if n:
                sizes.append((int(lst), int(n)))
                self._apart[int(lst)] = bool(apart)
        tail = self.conn.execute(f"SELECT id, scale, codes FROM {self.t['tail']}{chosen}").fetchall()
        listed = sum(n for _, n in sizes)
        total = listed + len(tail)
        ids, scales, coarse = np.empty(total, np.int64), np.empty(total, np.float32), np.empty(total, np.float32)
        query = Query(q)
        shared = ivfscan.Lists(self.t["lists"], sizes, self.codec.dims, query, ids, scales, coarse)
        if partner is not None and len(sizes) > 1:
            partner.offer(shared)
        if self._buffer is None or self._buffer.dims != self.codec.dims:
            self._buffer = ivfscan.Buffer(self.codec.dims)
        shared.scan(self.conn, self._buffer)
        rows = np.diff(shared.starts)
        lists = np.concatenate([np.repeat(np.array([lst for lst, _ in sizes], np.int64), rows),
                                np.full(len(tail), -1, np.int64)])
        slots = np.concatenate([np.arange(listed, dtype=np.int64) - np.repeat(shared.starts[:-1], rows),
                                np.full(len(tail), -1, np.int64)])
        if tail:
            at = listed
            ids[at:] = [r[0] for r in tail]
            scales[at:] = [r[1] for r in tail]
            codes = self.codec.codes_rows(b"".join(r[2] for r in tail))
            coarse[at:] = query.coarse(codes, scales[at:])
        return ids, scales, coarse, lists, slots

    def _probe(self, q, widen=1):
        if self.cents is None:
            return None
        size = self.size
        per_list = max(1.0, size / len(self.cents))
        scan = self.scan if self.scan is not None else min(SCAN_TARGET, max(SCAN_MIN, SCAN_SHARE * size))
        nprobe = int(min(len(self.cents), widen * max(MIN_PROBE, np.ceil(scan / per_list))))
        if nprobe >= len(self.cents):
            return None
        return np.argpartition(-(self.cents @ q), nprobe - 1)[:nprobe]

    def _fine(self, pick, ids, lists, slots):
        """The fine codes of the candidates at ``pick``: the tail's in one query, the lists' slot by slot."""
        width = self.codec.fine_width
        out = np.zeros((len(pick), width), np.uint8)
        by_list, tail = {}, {}
        for row, position in enumerate(pick.tolist()):
            lst = int(lists[position])
            if lst < 0:
                tail[int(ids[position])] = row
            else:
                by_list.setdefault(lst, []).append((row, int(slots[position])))
        if tail:
            for chunk, fine in self.conn.execute(f"SELECT id, fine FROM {self.t['tail']} WHERE id IN "
                                                 f"({','.join(map(str, tail))})"):
                out[tail[chunk]] = np.frombuffer(fine, np.uint8)
        for lst, wanted in by_list.items():
            table = self.t["fine"] if self._apart.get(lst) else self.t["lists"]
            with self.conn.blob_open("main", table, "fine", lst, False) as blob:
                for row, slot in wanted:
                    blob.seek(slot * width)
                    blob.read_into(out[row])
        return out


class Query:
    """A unit query as two rows of int8 codes for the scan's integer products, ``q ~ s * (hi + lo / 254)``:
    ``hi`` rounded as ``Codec.encode`` rounds a vector's coarse codes, ``lo`` the rest, so within ``s / 508``
    a component. (``hi`` alone, within ``s / 2``, moved the coarse cosines by up to 1.1e-3 at 1M, as much
    as the coarse codes' own rounding; bench_scale's neighbours are that close: recall@10 1.000 -> 0.982.)"""

    def __init__(self, q):
        top = float(np.abs(q).max()) if len(q) else 0.0
        self.scale = np.float32(top / 127 if top > 0 else 1.0)
        ratio = np.asarray(q, np.float32) / self.scale
        hi = np.clip(np.rint(ratio), -127, 127)
        lo = np.clip(np.rint((ratio - hi) * 254), -127, 127)
        self.codes = np.stack([hi, lo]).astype(np.int8)
        self.fine_scale = np.float32(self.scale / 254)

    def coarse(self, codes, scales):
        """Coarse cosines of int8 codes (rows) with this query: each row's integer products with the query's
        two rows of codes (SimSIMD's int8 kernel, summed in integers; as float32 exact up to 1,040
        dimensions, |product| <= d x 127^2 < 2^24, and within 6e-8 of it beyond), weighted by the scales.
        Not ``cdist(..., out=)``: SimSIMD 6.5 returns None from it without a reference, and the process
        aborts ("deallocating None") some hundred scans later."""
        if not len(codes):
            return np.zeros(0, np.float32)
        products = np.asarray(simsimd.cdist(self.codes, codes, metric="dot", out_dtype="float32"))
        return (products[0] * self.scale + products[1] * self.fine_scale) * scales


def vectors_of(conn, space_id, chunk_ids, locator=None):
    """``{chunk id: float32 vector}`` of these chunks (decoded: within ``Codec.bound`` of what was stored).

    ``locator``: a ``Locator`` kept across calls (a sync's batches), so the lists' ids are not read
    again for each; without one, they are read once for this call."""
    t = names(space_id)
    wanted = np.asarray(sorted({int(i) for i in chunk_ids}), np.int64)
    if not len(wanted):
        return {}
    with Snapshot(conn):
        form = codec(conn, space_id)
        out = {}
        rows = conn.execute(f"SELECT id, scale, codes, fine FROM {t['tail']} WHERE id IN "
                            f"({','.join(map(str, wanted.tolist()))})").fetchall()
        for i, s, c, f in rows:
            out[i] = form.decode(np.array([s], np.float32), form.codes_rows(c), f)[0]
        rest = wanted[~np.isin(wanted, list(out))]
        if not len(rest):
            return out
        fresh = locator is None or locator.ids is None
        locator = locator or Locator()
        if fresh:
            locator.read(conn, t["lists"])
        rest = _from_lists(conn, t, form, locator, rest, out)
        if len(rest) and not fresh:   # moved or added since the locator was read: read it again, once
            locator.read(conn, t["lists"])
            _from_lists(conn, t, form, locator, rest, out)
    return out


def _from_lists(conn, t, form, locator, wanted, out):
    """Read into ``out`` the ``wanted`` chunks found in the lists where ``locator`` says (the id stored
    at the slot checked first); returns the ids not found so."""
    lists, slots, ids = locator.find(wanted)
    order = np.lexsort((slots, lists))
    lists, slots, ids = lists[order], slots[order], ids[order]
    bounds = np.flatnonzero(np.diff(lists)) + 1
    for part in np.split(np.arange(len(lists)), bounds) if len(lists) else []:
        lst, at, expect = int(lists[part[0]]), slots[part], ids[part]
        try:
            with conn.blob_open("main", t["lists"], "ids", lst, False) as blob:
                stored = np.frombuffer(blob.read(), np.int64)
        except apsw.SQLError:   # the list is gone (a retrain since)
            continue
        inside = at < len(stored)
        good = np.zeros(len(at), bool)
        good[inside] = stored[at[inside]] == expect[inside]
        at, expect = at[good], expect[good]
        if not len(at):
            continue
        parts = {}
        for table, column, width in ((t["lists"], "scales", 4), (t["lists"], "codes", form.dims),
                                     (fine_table(conn, t, lst), "fine", form.fine_width)):
            with conn.blob_open("main", table, column, lst, False) as blob:
                chunks = []
                for slot in at.tolist():
                    blob.seek(slot * width)
                    chunks.append(blob.read(width))
                parts[column] = b"".join(chunks)
        decoded = form.decode(np.frombuffer(parts["scales"], np.float32), form.codes_rows(parts["codes"]),
                              parts["fine"])
        for chunk, vector in zip(expect.tolist(), decoded):
            out[chunk] = vector
    return wanted[~np.isin(wanted, list(out))]


class Locator:
    """Where each chunk of a space's lists is (list, slot), read once for many ``vectors_of`` calls.

    Finding chunks without it reads every list's ids: a sync pushing vectors the journal already
    holds (embedded offline, pushed later) did so for each batch of 500 messages, so the push
    slowed as the space grew (O(space) per batch). A found slot is checked against the id stored
    there before it is read (a retrain or a purge since may have moved or zeroed it); what is not
    found, or not found where the locator says, has the locator read again once: a chunk still not
    found has no vector in the lists."""

    def __init__(self):
        self.ids = self.lists = self.slots = None

    def read(self, conn, table):
        ids, lists, slots = [], [], []
        for lst, blob in conn.execute(f"SELECT list, ids FROM {table}"):
            found = np.frombuffer(blob, np.int64)
            ids.append(found)
            lists.append(np.full(len(found), lst, np.int64))
            slots.append(np.arange(len(found), dtype=np.int64))
        ids = np.concatenate(ids) if ids else np.zeros(0, np.int64)
        order = np.argsort(ids, kind="stable")
        order = order[ids[order] != 0]   # zeroed slots: deleted chunks
        self.ids = ids[order]
        self.lists = np.concatenate(lists)[order] if lists else np.zeros(0, np.int64)
        self.slots = np.concatenate(slots)[order] if slots else np.zeros(0, np.int64)

    def find(self, wanted):
        """``(lists, slots, ids)`` of the ``wanted`` chunk ids (sorted, distinct) it knows."""
        if self.ids is None or not len(self.ids):
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        at = np.searchsorted(self.ids, wanted)
        at = np.minimum(at, len(self.ids) - 1)
        hit = self.ids[at] == wanted
        return self.lists[at[hit]], self.slots[at[hit]], wanted[hit]


def drop(conn, space_id):
    t = names(space_id)
    conn.execute(f"DROP TRIGGER IF EXISTS ivf_{int(space_id)}_chunk_delete;" + "".join(
        f"DROP TABLE IF EXISTS {t[k]};" for k in ("lists", "tail", "meta", "dead", "next", "old", "fine", "next_fine",
                                                  "old_fine")))
