"""Embedding spaces and their vectors in the local journal.

Small functions over an apsw connection. The ``spaces`` and ``chunks`` tables
come from the journal migrations; each space's vectors live in its own index
tables (``localstore.ivf``: an inverted file in SQLite, keyed by ``chunks.id``).
Created with them, a trigger drops a chunk's vector when the chunk goes (also
through ``ON DELETE CASCADE`` from messages, when foreign keys are on); a slot in
a list's blobs is zeroed by ``ivf.zero_dead``, which purge and sync call.
Vectors of different spaces are never compared: every query names its space.

Journals written before the index kept each space in a sqlite-vec ``vec0`` table
``vec_<space id>`` (float32); ``upgrade`` converts one (``chats sync`` does, in
batches), and until then search reads it through sqlite-vec.
"""

import datetime
import itertools
import json

import apsw
import numpy as np

from . import ivf

from ..models.base import Space
from ..models.chunking import Chunk
from ..models.spaces import canary_from_blob, check_canary, mismatch_error
from . import counts, db, outbox


def load_extension(conn):
    """Load sqlite-vec into ``conn`` once (a no-op when already loaded)."""
    try:
        conn.execute("SELECT vec_version()").fetchall()
        return
    except Exception:  # apsw.SQLError: no such function
        pass
    import sqlite_vec

    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)


def vec_table(space_id):
    return f"vec_{int(space_id)}"


def _space_from_row(row):
    _, key, provider, model, dimensions, options, _ = row
    return Space(provider, model, dimensions, json.loads(options or "{}"))


_SPACE_COLUMNS = "id, key, provider, model, dimensions, options, canary"


def list_spaces(conn):
    """``[(space_id, Space, canary or None)]`` of every space in the journal."""
    rows = conn.execute(f"SELECT {_SPACE_COLUMNS} FROM spaces ORDER BY id").fetchall()
    return [(row[0], _space_from_row(row), canary_from_blob(row[6])) for row in rows]


def ensure_space(conn, space, canary):
    """Id of ``space`` (a models.Space), creating its row, vec table and trigger if new.

    ``canary`` is the space's canary vector (``models.canary_vector(provider)``),
    stored only when the space is created.
    """
    space_id = db.find_space(conn, space.key)
    if space_id is not None:
        return space_id
    try:
        return _create_space(conn, space, canary)
    except apsw.ConstraintError:  # another process created it meanwhile
        return db.find_space(conn, space.key)


def _create_space(conn, space, canary):
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with conn:
        conn.execute(
            "INSERT INTO spaces(key, provider, model, dimensions, options, canary, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (space.key, space.provider, space.model, space.dimensions, space.options_json,
             _blob(canary), now))
        space_id = conn.last_insert_rowid()
        ivf.create(conn, space_id)
        ivf.set_dimensions(conn, space_id, space.dimensions)
        ivf.mark_ready(conn, space_id)
    return space_id


def legacy(conn, space_id):
    """Whether the space's vectors are still (wholly or partly) in a sqlite-vec table of an older version."""
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                             (vec_table(space_id),)).fetchall())


def upgrade(conn, space_id, transaction, progress=None, batch=5_000):
    """Copy a legacy sqlite-vec table's vectors into the space's index, ``batch`` rows per transaction,
    then drop the old table (its trigger with it). The old table is read through a second connection
    (one snapshot) and stays whole until the end, so searches meanwhile read it; a run killed midway
    starts again (the copy is idempotent). Returns the vectors copied."""
    if not legacy(conn, space_id):
        return 0
    load_extension(conn)
    table, tail = vec_table(space_id), ivf.names(space_id)["tail"]
    dims = conn.execute("SELECT dimensions FROM spaces WHERE id = ?", (space_id,)).fetchall()[0][0]
    total = conn.execute("SELECT count(*) FROM chunks WHERE space_id = ?", (space_id,)).fetchall()[0][0]
    with transaction():
        ivf.create(conn, space_id)
        ivf.set_dimensions(conn, space_id, dims)
    reader = apsw.Connection(conn.db_filename("main"), flags=apsw.SQLITE_OPEN_READONLY)
    moved = 0
    try:
        load_extension(reader)
        rows = reader.execute(f"SELECT rowid, embedding FROM {table}")
        while True:
            part = list(itertools.islice(rows, batch))
            if part:
                with transaction():
                    ivf.add(conn, space_id, [r[0] for r in part],
                            np.frombuffer(b"".join(r[1] for r in part), np.float32).reshape(len(part), -1))
                moved += len(part)
                if progress:
                    progress(moved, total)
            if len(part) < batch:
                break
    finally:
        reader.close()
    conn.execute("PRAGMA secure_delete = ON")
    with transaction():
        # chunks deleted after the snapshot was taken: their vectors must not come back
        conn.execute(f"DELETE FROM {tail} WHERE id NOT IN (SELECT id FROM chunks WHERE space_id = ?)", (space_id,))
        conn.execute(f"DROP TRIGGER IF EXISTS {table}_chunk_delete")
        conn.execute(f"DROP TABLE {table}")
        ivf.mark_ready(conn, space_id)
    return moved


def repair(conn, space_id, transaction):
    """A space whose index tables are gone (or were never finished) and that has no legacy table: its
    chunks are forgotten, so that sync embeds their messages again, and an empty index is created.
    Returns how many chunks are to be embedded again."""
    if ivf.ready(conn, space_id) or legacy(conn, space_id):
        return 0
    dims = conn.execute("SELECT dimensions FROM spaces WHERE id = ?", (space_id,)).fetchall()[0][0]
    with transaction():
        lost = conn.execute("SELECT count(*) FROM chunks WHERE space_id = ?", (space_id,)).fetchall()[0][0]
        ivf.drop(conn, space_id)
        conn.execute("DELETE FROM chunks WHERE space_id = ?", (space_id,))
        ivf.create(conn, space_id)
        ivf.set_dimensions(conn, space_id, dims)
        ivf.mark_ready(conn, space_id)
    return lost


def maintain(conn, space_id, transaction, progress=None, busy=False):
    """Keep the space's index in shape after sync wrote vectors (``ivf.maintain``); ``busy``: more batches
    follow (the tail may grow longer before it is folded)."""
    return ivf.maintain(conn, space_id, transaction, progress,
                        ivf.BUSY_TAIL_SHARE if busy else ivf.TAIL_SHARE)


def _blob(vector):
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def write_message_vectors(conn, space_id, message_id, chunks):
    """Store a message's chunk vectors in a space, replacing the ones it had there.

    ``chunks`` are ``(index, start_char, end_char, vector)`` tuples (``models.Chunk``);
    an empty list just removes the message's vectors from the space. Replaced vectors
    still in a list's blobs are zeroed by the next ``ivf.zero_dead`` (``LocalVectors.save``).
    """
    with conn:
        conn.execute("DELETE FROM chunks WHERE space_id = ? AND message_id = ?", (space_id, message_id))
        ids = []
        for index, start, end, _vector in chunks:
            conn.execute("INSERT INTO chunks(space_id, message_id, chunk_index, start_char, end_char) "
                         "VALUES (?, ?, ?, ?, ?)", (space_id, message_id, index, start, end))
            ids.append(conn.last_insert_rowid())
        if ids:
            ivf.add(conn, space_id, ids, np.stack([np.asarray(c[3], np.float32) for c in chunks]))


def load_message_vectors(conn, space_id, message_ids, locator=None):
    """``{message_id: [Chunk]}`` of the messages that have vectors in the space (``locator``: an
    ``ivf.Locator`` kept across calls)."""
    ids = json.dumps([int(m) for m in message_ids])
    rows = conn.execute(
        "SELECT c.id, c.message_id, c.chunk_index, c.start_char, c.end_char FROM chunks c WHERE c.space_id = ? "
        "AND c.message_id IN (SELECT value FROM json_each(?)) ORDER BY c.message_id, c.chunk_index",
        (space_id, ids)).fetchall()
    return _by_message(rows, ivf.vectors_of(conn, space_id, [r[0] for r in rows], locator) if rows else {})


def read_ahead(conn, space_id, first, limit, locator=None):
    """``({message_id: [Chunk]}, last)``: the vectors of the space's messages from id ``first`` on, at
    most ``limit`` chunks of them, and the last message id they hold whole (None: every message from
    ``first`` on). One read of the index for many batches: its lists are long blobs, and each read of
    one walks its pages, so a batch of 500 messages read alone touched nearly every page of the index."""
    with db.Snapshot(conn):
        rows = conn.execute(
            "SELECT id, message_id, chunk_index, start_char, end_char FROM chunks WHERE space_id = ? "
            "AND message_id >= ? ORDER BY message_id, chunk_index LIMIT ?", (space_id, int(first), limit + 1)).fetchall()
        last = None
        if len(rows) > limit:
            last = rows[-1][1] - 1   # the last message's chunks may go on past the limit
            rows = [r for r in rows if r[1] <= last]
        found = ivf.vectors_of(conn, space_id, [r[0] for r in rows], locator) if rows else {}
    return _by_message(rows, found), last


def _by_message(rows, found):
    """``{message_id: [Chunk]}`` of chunk rows ``(id, message id, index, start, end)`` whose vector is in
    ``found`` (``{chunk id: vector}``)."""
    out = {}
    for chunk_id, message_id, index, start, end in rows:
        if chunk_id in found:
            out.setdefault(message_id, []).append(Chunk(index, start, end, found[chunk_id]))
    return out


_UNEMBEDDED = """FROM messages m WHERE m.synced = 1 AND m.copy = 0 AND m.id > ?
AND (typeof(m.content) = 'blob' OR trim(m.content, ' 	
') != '') AND m.kind NOT IN (SELECT value FROM json_each(?))
AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = ? AND c.message_id = m.id)"""


def unembedded(conn, space_id, after_id=0, limit=500, skip_kinds=()):
    """Messages already pushed (``synced``) that have no vector in the space, oldest first
    (``id > after_id``), as rows like ``Journal.pending``'s: the space is newer than their push.
    Messages of ``skip_kinds`` (kinds the space embeds nothing of) are not asked for."""
    cur = conn.execute(f"SELECT m.id, chats_uuid(m.uuid), m.seq, m.role, m.kind, chats_text(m.content), chats_time(m.created_at), "
                       f"m.message_id, m.is_sidechain, m.copy, (SELECT n.session_id FROM session_numbers n "
                       f"WHERE n.number = m.session) {_UNEMBEDDED} ORDER BY m.id LIMIT ?",
                       (after_id, json.dumps(list(skip_kinds)), space_id, limit))
    names = ("id", "uuid", "seq", "role", "kind", "content", "created_at", "message_id", "is_sidechain", "copy",
             "session_id")
    return [dict(zip(names, row)) for row in cur]


def count_unembedded(conn, space_id, skip_kinds=()):
    """How many messages ``unembedded`` would give in all (from the journal's counters: ``counts``)."""
    return counts.unembedded(conn, space_id, skip_kinds)


def backlog(conn, space_id, limits=()):
    """``(messages, characters)`` still to embed into the space: ``counts.backlog`` (which says whether
    the characters are exact)."""
    return counts.backlog(conn, space_id, limits)[:2]


def delete_message_vectors(conn, message_ids):
    """Remove every vector of these messages, in all spaces (their bytes zeroed in the index)."""
    with conn:
        conn.executemany("DELETE FROM chunks WHERE message_id = ?", [(m,) for m in message_ids])
        zero_deleted(conn)


def zero_deleted(conn):
    """Zero, in every space's index, the slots of chunks deleted since the last call (``ivf.zero_dead``)."""
    return sum(ivf.zero_dead(conn, space_id) for space_id, _space, _canary in list_spaces(conn)
               if ivf.exists(conn, space_id))


def knn(conn, space_id, query_vector, k=10):
    """The ``k`` nearest chunks: ``[(message_id, chunk_index, distance)]``, nearest first.

    Distance is cosine distance (1 - cosine similarity).
    """
    ids, similarities = ivf.Reader(conn, space_id).nearest(query_vector, int(k))
    where = {row[0]: row[1:] for row in conn.execute(
        "SELECT id, message_id, chunk_index FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids.tolist()),))}
    return [(*where[i], 1.0 - s) for i, s in zip(ids.tolist(), similarities.tolist()) if i in where][:int(k)]


def count_vectors(conn):
    """``[(space_id, Space, vectors, messages)]`` for every space."""
    tally = {row[0]: row[1:] for row in conn.execute(
        "SELECT space_id, count(*), count(DISTINCT message_id) FROM chunks GROUP BY space_id")}
    return [(space_id, space, *tally.get(space_id, (0, 0))) for space_id, space, _ in list_spaces(conn)]


def stored_spaces(conn):
    """``[(space_id, Space, vectors, messages, canary or None)]`` for every space (``conn`` may be None)."""
    if conn is None:
        return []
    canaries = {space_id: canary for space_id, _, canary in list_spaces(conn)}
    return [(space_id, space, count, messages, canaries[space_id])
            for space_id, space, count, messages in count_vectors(conn)]


def check_space(conn, provider):
    """Id of the space ``provider`` reads, after checking its canary; None if the journal has no vectors.

    Raises SpaceMismatchError, naming both models, when the stored vectors are
    from another space, or the stored canary is not reproduced (cosine < 0.99).
    """
    spaces = list_spaces(conn)
    configured = provider.space
    for space_id, space, canary in spaces:
        if space.key == configured.key:
            check_canary(space, canary, provider)
            return space_id
    populated = [space for space_id, space, count, _ in count_vectors(conn) if count]
    if populated:
        raise mismatch_error(populated, configured, "no vectors of the configured model are stored")
    return None


READ_AHEAD = 50_000   # chunks whose vectors one read of the index gathers for the next batches (75 MB at 384 dims)


class LocalVectors:
    """``prepare(space, canary)``, ``load(message_ids) -> {message_id: [Chunk]}``,
    ``save({message_id: [Chunk]})`` (chunks as ``models.Chunk(index, start, end, vector)``)."""

    def __init__(self, conn):
        self.conn, self.space_id = conn, None
        self.locator = ivf.Locator()   # where the space's chunks are in its lists, read once per run
        self._ahead = None             # (first message id, last or None, {message id: [Chunk]}, data_version)

    def prepare(self, space, canary):
        """Use (creating if new) the journal's space for ``space`` (a ``models.Space``); a legacy vector
        table is converted first, and an index that is gone is made again (``vectors.upgrade``, ``repair``)."""
        self.space_id = ensure_space(self.conn, space, canary)
        self.locator, self._ahead = ivf.Locator(), None
        upgrade(self.conn, self.space_id, lambda: db.Immediate(self.conn))
        repair(self.conn, self.space_id, lambda: db.Immediate(self.conn))
        if ivf.exists(self.conn, self.space_id):
            ivf.ensure_scan_index(self.conn, self.space_id, lambda: db.Immediate(self.conn))

    def load(self, message_ids):
        """The vectors the journal holds for these messages, read ahead: a sync asks batch after batch
        in id order, and one read of the index serves many batches (``vectors.read_ahead``)."""
        ids = sorted({int(m) for m in message_ids})
        if not ids:
            return {}
        ahead, version = self._ahead, self.conn.execute("PRAGMA data_version").fetchall()[0][0]
        if ahead is None or ids[0] < ahead[0] or (ahead[1] is not None and ids[-1] > ahead[1]) or \
                version != ahead[3]:   # another process wrote since: a purged message's id may be taken again
            found, last = read_ahead(self.conn, self.space_id, ids[0], READ_AHEAD, self.locator)
            if last is not None and last < ids[-1]:   # the batch alone holds more chunks than that
                self._ahead = None
                return load_message_vectors(self.conn, self.space_id, ids, self.locator)
            self._ahead = ahead = (ids[0], last, found, version)
        return {m: ahead[2][m] for m in ids if m in ahead[2]}

    def save(self, embedded):
        """Store a batch's vectors in one journal transaction; returns the message ids kept.

        A message purged since sync read it (``chats purge`` during the run) is skipped: its
        vectors have nothing left to belong to. The write lock is taken first, so no purge
        lands between the check and the writes.
        """
        with db.Immediate(self.conn):
            kept = outbox.present(self.conn, embedded)
            for message_id in kept:
                write_message_vectors(self.conn, self.space_id, message_id, embedded[message_id])
            zero_deleted(self.conn)   # vectors these replaced
        ahead = self._ahead
        if ahead is not None and any(embedded[m] or m in ahead[2] for m in kept):
            self._ahead = None   # what was read ahead does not hold these any more (none: nothing changed)
        return kept

    def maintain(self, progress=None, busy=False):
        """Keep the index in shape after vectors were written (``vectors.maintain``)."""
        if self.space_id is None:
            return None
        return maintain(self.conn, self.space_id, lambda: db.Immediate(self.conn), progress, busy)


def local_vectors(journal):
    return LocalVectors(journal.conn)
