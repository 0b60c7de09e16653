"""Rewriting the transcript lines Postgres keeps for restore (``chats redact --postgres``).

Lines pushed by earlier versions stay as they were pushed: the push inserts ``ON CONFLICT DO
NOTHING`` and the journal marks them synced, so a value only its JSON key names as a secret
(``"password": ...``) is still there in clear. ``redact_kept_lines(conn, redact_blob)`` reads
``raw_lines`` in the order of its primary key, a batch at a time (keyset pagination: no
transaction held, no offset, memory bounded by ``BATCH_BYTES`` and one line), gives each packed
line to ``redact_blob`` (``rawlines.redact_packed`` with the push's redaction: the caller's) and
writes back only the rows whose bytes change, a transaction per batch, each row only if it still
holds the bytes that were read. Killed at any point it has rewritten whole batches; run again, it
finds them unchanged and goes on.
"""

import hashlib

from .. import faults, rawlines

BATCH_ROWS = 500
BATCH_BYTES = 8 << 20   # packed bytes read at once (a single longer line is read alone)

_KEYS = """
SELECT conversation_id, line_key, octet_length(line) FROM raw_lines
WHERE line IS NOT NULL AND (conversation_id, line_key) > (%s::uuid, %s::text)
ORDER BY conversation_id, line_key LIMIT %s
"""
_FIRST_KEYS = """
SELECT conversation_id, line_key, octet_length(line) FROM raw_lines
WHERE line IS NOT NULL ORDER BY conversation_id, line_key LIMIT %s
"""
_LINES = """
SELECT conversation_id, line_key, line FROM raw_lines
WHERE (conversation_id, line_key) >= (%s::uuid, %s::text) AND (conversation_id, line_key) <= (%s::uuid, %s::text)
  AND line IS NOT NULL AND octet_length(line) <= %s
ORDER BY conversation_id, line_key
"""
_UPDATE = """
UPDATE raw_lines SET line = %s WHERE conversation_id = %s AND line_key = %s AND sha256(line) = %s
"""


def has_kept_lines(conn):
    """Whether Postgres holds any kept line (one index probe)."""
    if not conn.execute("SELECT to_regclass('raw_lines') IS NOT NULL").fetchone()[0]:
        return False
    return conn.execute("SELECT EXISTS (SELECT 1 FROM raw_lines WHERE line IS NOT NULL)").fetchone()[0]


def estimated_lines(conn):
    """About how many rows ``raw_lines`` has (the planner's estimate: no scan), for a progress bar."""
    row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = to_regclass('raw_lines')").fetchone()
    return max(int(row[0]), 0) if row and row[0] is not None else 0


def redact_kept_lines(conn, redact_blob, dry_run=False, on_batch=None, on_change=None, batch_rows=BATCH_ROWS,
                      batch_bytes=BATCH_BYTES):
    """Run every kept line of Postgres through ``redact_blob(packed) -> packed | None`` and write back
    those that change (``None``: the line becomes a link, as the push makes a line it cannot read as
    JSON); ``dry_run`` writes nothing. ``on_change(old, new)`` for each row that changes,
    ``on_batch(rows read so far)`` after each batch. ``conn`` is autocommit.

    Returns ``{"read", "rewritten", "linked", "unreadable"}``. A row that cannot be unpacked (not
    zlib, cut short, more than ``rawlines.LINE_LIMIT`` bytes) is left as it is and counted as
    ``unreadable`` (``chats restore`` refuses it too)."""
    counts = {"read": 0, "rewritten": 0, "linked": 0, "unreadable": 0}
    for batch in _batches(conn, batch_rows, batch_bytes):
        updates = []
        for conversation, key, blob in batch:
            counts["read"] += 1
            if blob is None:   # longer than any line can be packed: not one this version could unpack
                counts["unreadable"] += 1
                continue
            blob = bytes(blob)
            try:
                new = redact_blob(blob)
            except rawlines.UnpackError:
                counts["unreadable"] += 1
                continue
            if new == blob:
                continue
            counts["linked" if new is None else "rewritten"] += 1
            if on_change is not None:
                on_change(blob, new)
            updates.append((new, conversation, key, hashlib.sha256(blob).digest()))
        if updates and not dry_run:
            with conn.transaction(), conn.cursor() as cur:
                cur.executemany(_UPDATE, updates)
                faults.point("mid-rewrite")
            faults.point("after-rewrite")
        if on_batch is not None:
            on_batch(counts["read"])
    return counts


def _batches(conn, batch_rows, batch_bytes):
    """``[(conversation_id, line_key, packed line or None)]`` batches in key order: the keys and sizes
    first (no line read), then the lines in runs of at most ``batch_bytes`` (a longer line alone; one
    longer than ``rawlines.LINE_LIMIT`` packed is not read: None)."""
    after = None
    limit = rawlines.LINE_LIMIT + 1024   # zlib never grows a line by more than a few bytes per 16 KB
    while True:
        keys = (conn.execute(_FIRST_KEYS, (batch_rows,)) if after is None
                else conn.execute(_KEYS, (*after, batch_rows))).fetchall()
        if not keys:
            return
        after = keys[-1][:2]
        out = []
        for run in _runs(keys, batch_bytes):
            (first_c, first_k, _), (last_c, last_k, _) = run[0], run[-1]
            found = {(c, k): line for c, k, line in
                     conn.execute(_LINES, (first_c, first_k, last_c, last_k, limit)).fetchall()}
            out.extend((c, k, found.get((c, k))) for c, k, size in run
                       if (c, k) in found or size > limit)   # a row deleted meanwhile is not counted
        yield out


def _runs(keys, batch_bytes):
    run, size = [], 0
    for row in keys:
        length = row[2] or 0
        if run and size + length > batch_bytes:
            yield run
            run, size = [], 0
        run.append(row)
        size += length
    if run:
        yield run
