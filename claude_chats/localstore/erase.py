"""Erasing from the journal so that no byte is left: ``chats purge`` and ``chats redact --journal``.

``purge_local(conn, target)`` deletes what a ``Target`` (a session with its
subagents, or a project folder and everything below it) covers: the messages
(their FTS entries go with them through the journal's triggers), the chunks and
their sqlite-vec vectors, the transcript lines kept for restore, the sessions, the
pending summaries of their files.
``redact_stored(conn, clean)`` rewrites the stored text through ``clean``.
Both erase in place: every writing connection runs with ``PRAGMA secure_delete``
(``db.connect``: a deleted cell, a freed page is zeroed) and the FTS index with
FTS5's ``secure-delete`` option (migration 0007: a deleted document's entries
leave the index segments themselves), so the deletes leave no byte of what they
removed. The index is in parts (``ftsparts``): where a purge deletes more than
1/``SECURE_DELETE_SHARE`` of a part's messages, it deletes from that part plainly
instead and ``scrub_file`` merges that part alone (``optimize``), which then costs
less; a part left empty is dropped. ``scrub_file`` ends by checkpointing the WAL away (no old frame
keeps it). The purged files' cursors keep their tail (the 64 bytes before the
cursor) as its checksum only.
A journal written before migration 0007 (by connections without
``secure_delete``: free pages and cells may hold old copies) is rewritten once
instead, by its first ``scrub_file`` (FTS merged, ``VACUUM``), as every purge
did before. The transcript cursors stay, so purged lines are not imported again
from Claude Code's files.
"""

import json
import os
import time
from dataclasses import dataclass

import apsw

from .. import rawlines, times
from ..errors import ConfigError
from . import ftslengths, ftsparts, keptlines, writer
from .db import SESSION_OF, Immediate, get_state, number_of, set_state

KINDS = ("session", "project")
CHECKPOINT_TRIES = 20
ERASED_IN_PLACE = "erased_in_place"   # state key: every byte freed since was zeroed (migration 0007)
FTS_MERGE = "fts_merge_pending"       # state key: FTS deletes made without secure-delete, to merge away
SECURE_DELETE_SHARE = 450   # FTS5 secure-delete for at most 1/450 of a part's messages, else plain
#   deletes and a merge of that part. Measured on one whole index first (scripts/bench_purge.py, a
#   2,000-message session, load 7-9): secure-delete ~29 ms a message at 100k and ~160 ms at 1M, `optimize`
#   0.064 / 0.38 ms a message of the index: alike at 1/450 of it. Within a part of 65,536 at 1M
#   (scripts/bench_fts_parts.py): ~140 messages by secure-delete 0.62-1.24 s, ~300 by a merge 1.11-1.17 s.


@dataclass(frozen=True)
class Target:
    """What to purge: a session (with its subagents) or a project folder and everything below it.

    ``before``: only what was written up to this ISO time (tombstones); None: everything.
    """

    kind: str
    value: str
    before: str = None

    @classmethod
    def of(cls, session=None, project=None):
        if bool(session) == bool(project):
            raise ConfigError("purge needs exactly one of --session ID or --project PATH")
        if session:
            return cls("session", session)
        return cls("project", os.path.abspath(os.path.expanduser(project)).rstrip("/") or "/")

    def describe(self):
        return f"session {self.value} (and its subagents)" if self.kind == "session" else \
            f"project {self.value} (and every folder below it)"

    def session_filter(self, id_col, parent_col, project_col, param="?"):
        """SQL condition on a sessions/conversations row and its parameters."""
        if self.kind == "session":
            return f"({id_col} = {param} OR {parent_col} = {param})", [self.value, self.value]
        prefix = self.value if self.value.endswith("/") else self.value + "/"
        return (f"({project_col} = {param} OR substr({project_col}, 1, {param}) = {param})",
                [self.value, len(prefix), prefix])



# -- purging ---------------------------------------------------------------------------


_CHUNKS = "chunks c JOIN messages m ON m.id = c.message_id"
_NUMBER_OF_SESSIONS = number_of("sessions.id")
_FILES = "transcripts t JOIN messages m ON m.file_id = t.id"


def _local_sql(target, select, source="messages m"):
    """``SELECT select FROM source`` over the messages ``target`` covers (``m``: messages)."""
    where, args = target.session_filter("s.id", "s.parent_session_id", "s.project_path")
    sql = f"SELECT {select} FROM {source} {SESSION_OF} WHERE {where}"
    if target.before:
        sql += " AND coalesce(julianday(chats_time(m.created_at)) <= julianday(?), 1)"
        args.append(target.before)
    return sql, args


def _one(conn, sql_args):
    return conn.execute(*sql_args).fetchall()[0]


def local_preview(conn, target):
    """Counts of what ``target`` covers in the journal, and the transcript files it came from."""
    messages, sessions = _one(conn, _local_sql(target, "count(*), count(DISTINCT m.session)"))
    vectors, = _one(conn, _local_sql(target, "count(*)", _CHUNKS))
    files = [r[0] for r in conn.execute(*_local_sql(target, "DISTINCT t.path", _FILES))]
    return {"sessions": sessions, "messages": messages, "vectors": vectors, "transcripts": sorted(files)}


def sessions_covered(conn, target):
    """Sessions ``target`` covers in the journal, as a person counts them (a subagent is its session's)."""
    return _one(conn, _local_sql(target, "count(DISTINCT coalesce(s.parent_session_id, s.id))"))[0]


def purge_local(conn, target, scrub_after=True):
    """Delete what ``target`` covers from the journal; returns the counts (see ``local_preview``)."""
    from . import vectors   # numpy, simsimd: not imported by `chats status`, which reads this module
    counts = local_preview(conn, target)
    if not counts["messages"] and not _empty_sessions(conn, target):
        return counts
    conn.execute("PRAGMA secure_delete = ON")
    with Immediate(conn):
        sql, args = _local_sql(target, "m.id")
        held = ftsparts.holding(conn, sql, args)
        ftslengths.forget(conn, held)   # the purged messages' lengths with them
        merged = [name for name, n in held.items() if n * SECURE_DELETE_SHARE > ftsparts.rows(conn, name)]
        if merged:
            _merge_instead(conn, merged)
        _delete_vectors(conn, target)
        _delete_kept_lines(conn, target)
        _forget_tails(conn, target)
        # summaries waiting for their leaf in the purged messages' files: the leaf will never come
        sql, args = _local_sql(target, "DISTINCT m.file_id")
        conn.execute(f"DELETE FROM pending_summaries WHERE file_id IN ({sql})", args)
        sql, args = _local_sql(target, "m.id")
        conn.execute(f"DELETE FROM messages WHERE id IN ({sql})", args)
        vectors.zero_deleted(conn)   # their chunks went with them; the index's slots are overwritten
        _forget_numbers(conn, target)
        where, args = target.session_filter("id", "parent_session_id", "project_path")
        conn.execute(f"DELETE FROM sessions WHERE {where} AND NOT EXISTS "
                     f"(SELECT 1 FROM messages m WHERE m.session = {_NUMBER_OF_SESSIONS})", args)
    if scrub_after:
        scrub_file(conn)
    return counts


def _merge_instead(conn, names):
    """This transaction's FTS deletes from the tables ``names`` are plain (a marker each), and
    ``scrub_file`` merges those tables (``optimize``) then turns FTS5's secure-delete on again: cheaper
    than secure-delete (29-160 ms a message, growing with the index) above 1/``SECURE_DELETE_SHARE`` of a
    table. The option is switched back in its own transaction (FTS5 applies it when the transaction's
    deletes are flushed, at commit), and a crash before the merge leaves ``FTS_MERGE`` (the tables, as
    JSON) for the next ``scrub_file``."""
    pending = _merge_pending(conn, get_state(conn, FTS_MERGE)) or []
    for name in names:
        ftsparts.secure_delete(conn, name, False)
    set_state(conn, FTS_MERGE, json.dumps(sorted(set(pending) | set(names))))


def _merge_pending(conn, value):
    """The tables ``FTS_MERGE`` names that are still there; every table for the value before the parts (a
    time, when the index was one table); None when nothing is pending."""
    if value is None:
        return None
    existing = ftsparts.tables(conn)
    try:
        names = json.loads(value)
    except ValueError:
        return existing
    if not isinstance(names, list):
        return existing
    return [n for n in existing if n in names]


def _delete_kept_lines(conn, target):
    """The transcript lines kept for restore of the sessions ``target`` covers (up to its time)."""
    where, args = target.session_filter("s.id", "s.parent_session_id", "s.project_path")
    numbers = f"SELECT n.number FROM session_numbers n JOIN sessions s ON s.id = n.session_id WHERE {where}"
    sql = f"DELETE FROM raw_lines WHERE session IN ({numbers})"
    if target.before:
        sql += " AND coalesce(julianday(chats_time(created_at)) <= julianday(?), 1)"
    conn.execute(sql, args + [target.before] if target.before else args)


def _forget_numbers(conn, target):
    """A conversation with no message and no kept line left keeps no number either (its id is in
    ``session_numbers``)."""
    where, args = target.session_filter("s.id", "s.parent_session_id", "s.project_path")
    numbers = f"SELECT n.number FROM session_numbers n JOIN sessions s ON s.id = n.session_id WHERE {where}"
    conn.execute(f"DELETE FROM session_numbers WHERE number IN ({numbers}) "
                 f"AND NOT EXISTS (SELECT 1 FROM raw_lines r WHERE r.session = session_numbers.number) "
                 f"AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session = session_numbers.number)", args)


def _forget_tails(conn, target):
    """The purged messages' transcripts keep their cursor, and the bytes before it (``tail``: how a file
    rewritten in place is recognised) as their checksum only: they end the last line read, text of it."""
    sql, args = _local_sql(target, "DISTINCT m.file_id")
    rows = conn.execute(f"SELECT id, tail FROM transcripts WHERE id IN ({sql}) AND tail IS NOT NULL", args).fetchall()
    conn.executemany("UPDATE transcripts SET tail = ? WHERE id = ?",
                     [(writer.tail_checksum(tail), fid) for fid, tail in rows if not tail.startswith(writer.CHECKSUM)])


def _empty_sessions(conn, target):
    where, args = target.session_filter("id", "parent_session_id", "project_path")
    return conn.execute(f"SELECT count(*) FROM sessions WHERE {where} AND NOT EXISTS "
                        f"(SELECT 1 FROM messages m WHERE m.session = {_NUMBER_OF_SESSIONS})", args).fetchall()[0][0]


def _delete_vectors(conn, target):
    """Rows of each legacy sqlite-vec table (journals before the index) that belong to the purged messages."""
    from . import vectors   # numpy, simsimd: not imported by `chats status`, which reads this module
    tables = {int(name[4:]) for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'vec_[0-9]*' "
        "AND name NOT GLOB 'vec_*_*'")}
    if not tables:
        return
    vectors.load_extension(conn)
    sql, args = _local_sql(target, "c.id", _CHUNKS)
    for space_id in sorted(tables):
        conn.execute(f"DELETE FROM vec_{space_id} WHERE rowid IN ({sql} AND c.space_id = ?)", [*args, space_id])


def scrub_file(conn):
    """Leave no trace of deleted rows in the file: the WAL checkpointed away (the deletes zeroed what
    they removed, see the module's docstring); a journal not yet erased in place (``ERASED_IN_PLACE``)
    is first rewritten whole, once (FTS merged, ``VACUUM``). True when the WAL was truncated."""
    conn.execute("PRAGMA secure_delete = ON")
    pending = _merge_pending(conn, get_state(conn, FTS_MERGE))
    if pending is not None:
        with Immediate(conn):
            for name in pending:
                ftsparts.optimize(conn, name)
                ftsparts.secure_delete(conn, name, True)
            conn.execute("DELETE FROM state WHERE key = ?", (FTS_MERGE,))
    ftsparts.drop_empty(conn)
    if get_state(conn, ERASED_IN_PLACE) is None:
        for name in ftsparts.tables(conn):
            ftsparts.optimize(conn, name)
        conn.execute("VACUUM")
        set_state(conn, ERASED_IN_PLACE, f"whole file rewritten {times.now_iso()}")
    for _ in range(CHECKPOINT_TRIES):
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0]
        if not busy:
            return True
        time.sleep(0.1)
    return False


def queue(conn, target, created_at):
    conn.execute("INSERT INTO purge_queue (kind, target, created_at) VALUES (?, ?, ?)",
                 (target.kind, target.value, created_at))


def queued(conn):
    return [{"id": i, "kind": k, "target": t, "created_at": c} for i, k, t, c in conn.execute(
        "SELECT id, kind, target, created_at FROM purge_queue ORDER BY id")]


# -- rewriting what is stored (chats redact --journal) ----------------------------------

REWRITE_BATCH = 500


def redact_stored(conn, clean, dry_run=False):
    """Rewrite the journal's stored text through ``clean`` (``redact.redact``): ``chats redact --journal``.

    Message content (FTS5 follows through the update trigger), session names,
    agent names and summaries, and summaries waiting for their leaf. A rewritten
    message loses its vectors (embedded from the old text) and is pending again,
    so the next sync embeds the redacted text; Postgres keeps the copy it has
    (pushed redacted when ``redact`` is on). Then, as ``chats purge`` does, the
    FTS index is merged and the file vacuumed with ``secure_delete`` and its WAL
    checkpointed, so the old text is left in no old index segment, free page or
    WAL frame. The transcript lines kept for restore are redacted inside their JSON
    (``rawlines.redact_line``: the values their keys name as secrets too).
    Returns ``{"messages", "sessions", "vectors", "lines", "scrubbed"}``.
    """
    counts = {"messages": 0, "sessions": 0, "vectors": 0, "scrubbed": False}
    if not dry_run:
        conn.execute("PRAGMA secure_delete = ON")
    after = 0
    while True:
        rows = conn.execute("SELECT id, chats_text(content) FROM messages WHERE id > ? ORDER BY id LIMIT ?",
                            (after, REWRITE_BATCH)).fetchall()
        if not rows:
            break
        after = rows[-1][0]
        changed = [(new, mid, text) for mid, text in rows for new in (clean(text),) if new != text]
        counts["messages"] += len(changed)
        if changed and not dry_run:
            counts["vectors"] += _rewrite_messages(conn, changed)
    counts["sessions"] = _rewrite_sessions(conn, clean, dry_run)
    counts["lines"] = _rewrite_kept_lines(conn, clean, dry_run)
    if not dry_run and (counts["messages"] or counts["sessions"] or counts["lines"]):
        counts["scrubbed"] = scrub_file(conn)
    return counts


def _rewrite_messages(conn, changed):
    """One transaction: new content (unless it changed meanwhile), vectors dropped, pending again."""
    from . import vectors   # numpy, simsimd: not imported by `chats status`, which reads this module
    ids = [mid for _, mid, _ in changed]
    marks = ",".join("?" * len(ids))
    with Immediate(conn):
        # the rewritten messages move to the head: their parts' kept lengths (the old texts' lengths) go too
        ftslengths.forget(conn, ftsparts.holding(conn, marks, ids))
        dropped = conn.execute(f"SELECT count(*) FROM chunks WHERE message_id IN ({marks})", ids).fetchall()[0][0]
        if dropped:
            vectors.load_extension(conn)
            conn.execute(f"DELETE FROM chunks WHERE message_id IN ({marks})", ids)
            vectors.zero_deleted(conn)
        conn.executemany("UPDATE messages SET content = ?, synced = 0 WHERE id = ? AND chats_text(content) = ?",
                         changed)
    return dropped


def _rewrite_kept_lines(conn, clean, dry_run):
    """Kept transcript lines redacted inside their JSON strings; how many changed."""
    count, after = 0, 0
    while True:
        rows = conn.execute("SELECT r.id, n.session_id, chats_uuid(r.key), chats_time(r.created_at), r.line, r.packed FROM raw_lines r "
                            "JOIN session_numbers n ON n.number = r.session WHERE r.id > ? AND r.line IS NOT NULL "
                            "ORDER BY r.id LIMIT ?", (after, REWRITE_BATCH)).fetchall()
        if not rows:
            return count
        after = rows[-1][0]
        changed = []
        for rid, session, key, created, line, packed in rows:
            # a line referring to its messages' text reads them as rewritten above: redacted there
            raw = keptlines.read_line(conn, session, key, created, line, packed)
            new = rawlines.redact_line(raw, clean)
            if new is not raw:   # None: a line the redaction cannot read, kept as a link
                blob, kind = (None, 1) if new is None else keptlines.pack_line(conn, session, key, created, new)
                changed.append((blob, kind, rid))
        count += len(changed)
        if changed and not dry_run:
            with Immediate(conn):
                conn.executemany("UPDATE raw_lines SET line = ?, packed = ? WHERE id = ?", changed)


def _rewrite_sessions(conn, clean, dry_run):
    count = 0
    stamp = times.now_iso()
    with Immediate(conn):
        for sid, *names in conn.execute("SELECT id, name, agent_name, ai_title, summary FROM sessions").fetchall():
            new = [clean(n) if n else n for n in names]
            if new != names:
                count += 1
                if not dry_run:
                    conn.execute("UPDATE sessions SET name = ?, agent_name = ?, ai_title = ?, summary = ?, "
                                 "updated_at = ? WHERE id = ?", (*new, stamp, sid))
        for file_id, leaf, summary in conn.execute(
                "SELECT file_id, leaf_uuid, summary FROM pending_summaries").fetchall():
            new = clean(summary)
            if new != summary and not dry_run:
                conn.execute("UPDATE pending_summaries SET summary = ? WHERE file_id = ? AND leaf_uuid = ?",
                             (new, file_id, leaf))
    return count


# -- the journal's tombstones (migration 0005) -------------------------------------------

_TOMBSTONE_COLUMNS = "id, kind, target, before, state, remote_id, machine, reason, sessions, messages, seen_at"


def remember(conn, target, state="applied", remote_id=None, machine=None, reason=None, sessions=0, messages=0):
    """Keep a tombstone in the journal (``target.before``: what it covers; a Postgres row once, by its id)."""
    conn.execute("INSERT INTO tombstones (kind, target, before, state, remote_id, machine, reason, sessions, messages, "
                 "seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (remote_id) DO NOTHING",
                 (target.kind, target.value, target.before, state, remote_id, machine, reason, sessions, messages,
                  times.now_iso()))


def tombstones(conn, state=None):
    """The journal's tombstones (``state``: only those), oldest first, as dicts."""
    sql = f"SELECT {_TOMBSTONE_COLUMNS} FROM tombstones" + (" WHERE state = ?" if state else "") + " ORDER BY id"
    names = [c.strip() for c in _TOMBSTONE_COLUMNS.split(",")]
    return [dict(zip(names, row)) for row in conn.execute(sql, (state,) if state else ())]


def remote_ids(conn):
    """Ids of the Postgres tombstones this journal has judged (applied, held or refused)."""
    return {i for (i,) in conn.execute("SELECT remote_id FROM tombstones WHERE remote_id IS NOT NULL")}


CONFIRMED = "confirmed (chats purge --apply-remote)"


def mark_applied(conn, tombstone_id, sessions, messages):
    """A held tombstone the person confirmed: applied, and not counted in what the sync applies alone."""
    conn.execute("UPDATE tombstones SET state = 'applied', reason = ?, sessions = ?, messages = ? WHERE id = ?",
                 (CONFIRMED, sessions, messages, tombstone_id))


def remote_sessions_since(conn, since, confirmed=True):
    """Sessions removed here by Postgres' tombstones recorded since ``since`` (ISO UTC); ``confirmed``:
    with those the person confirmed (else only those the sync applied on its own)."""
    return conn.execute("SELECT coalesce(sum(sessions), 0) FROM tombstones WHERE state = 'applied' AND "
                        "remote_id IS NOT NULL AND julianday(seen_at) >= julianday(?) AND (? OR reason IS NULL)",
                        (since, int(confirmed))).fetchall()[0][0]


def remote_summary(conn, since):
    """For ``chats status``: tombstones from Postgres waiting for ``chats purge --apply-remote``, those
    refused, and the sessions they removed here since ``since`` (ISO UTC); zeros before migration 0005."""
    try:
        waiting, refused = conn.execute("SELECT count(*) FILTER (WHERE state = 'pending'), count(*) FILTER "
                                        "(WHERE state = 'quarantined') FROM tombstones").fetchall()[0]
        return {"waiting": waiting, "refused": refused, "removed_sessions": remote_sessions_since(conn, since)}
    except apsw.SQLError:   # a journal opened read-only before migration 0005: no tombstones table
        return {"waiting": 0, "refused": 0, "removed_sessions": 0}
