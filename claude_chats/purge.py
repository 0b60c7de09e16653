"""``chats purge``: remove conversations everywhere they are stored.

Locally: the messages (their FTS entries go with them through the journal's
triggers, and the FTS index is merged so no old segment keeps the words), the
chunks and their sqlite-vec vectors, the sessions; then ``VACUUM`` with
``secure_delete`` and a WAL checkpoint, so the text is left in no free page
and no WAL frame. The transcript cursors stay, so the purged lines are not
imported again from Claude Code's files (which this does not delete; it lists
them).

Postgres: deleted at once when reachable, else the purge waits in the journal's
``purge_queue`` and the next ``chats sync`` applies it. Either way a tombstone
goes into Postgres' ``purges`` table (sql/0002_purges.sql); every machine's sync applies every
tombstone to its own journal before pushing, so no journal puts a purged
conversation back. A tombstone covers what was written up to its time: a
session continued after the purge keeps its new messages.
"""

import os
import time
from dataclasses import asdict, dataclass, field

from .localstore.db import Immediate

KINDS = ("session", "project")
SEEN_STATE = "purges_seen"
CHECKPOINT_TRIES = 20


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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
            from .errors import ConfigError
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


# -- the local journal -------------------------------------------------------------


_CHUNKS = "chunks c JOIN messages m ON m.id = c.message_id"
_FILES = "transcripts t JOIN messages m ON m.file_id = t.id"


def _local_sql(target, select, source="messages m"):
    """``SELECT select FROM source`` over the messages ``target`` covers (``m``: messages)."""
    where, args = target.session_filter("s.id", "s.parent_session_id", "s.project_path")
    sql = f"SELECT {select} FROM {source} JOIN sessions s ON s.id = m.session_id WHERE {where}"
    if target.before:
        sql += " AND coalesce(julianday(m.created_at) <= julianday(?), 1)"
        args.append(target.before)
    return sql, args


def _one(conn, sql_args):
    return conn.execute(*sql_args).fetchall()[0]


def local_preview(conn, target):
    """Counts of what ``target`` covers in the journal, and the transcript files it came from."""
    messages, sessions = _one(conn, _local_sql(target, "count(*), count(DISTINCT m.session_id)"))
    vectors, = _one(conn, _local_sql(target, "count(*)", _CHUNKS))
    files = [r[0] for r in conn.execute(*_local_sql(target, "DISTINCT t.path", _FILES))]
    return {"sessions": sessions, "messages": messages, "vectors": vectors, "transcripts": sorted(files)}


def purge_local(conn, target, scrub_after=True):
    """Delete what ``target`` covers from the journal; returns the counts (see ``local_preview``)."""
    counts = local_preview(conn, target)
    if not counts["messages"] and not _empty_sessions(conn, target):
        return counts
    conn.execute("PRAGMA secure_delete = ON")
    with Immediate(conn):
        _delete_vectors(conn, target)
        sql, args = _local_sql(target, "m.id")
        conn.execute(f"DELETE FROM messages WHERE id IN ({sql})", args)
        where, args = target.session_filter("id", "parent_session_id", "project_path")
        conn.execute(f"DELETE FROM sessions WHERE {where} AND NOT EXISTS "
                     "(SELECT 1 FROM messages m WHERE m.session_id = sessions.id)", args)
    if scrub_after:
        scrub(conn)
    return counts


def _empty_sessions(conn, target):
    where, args = target.session_filter("id", "parent_session_id", "project_path")
    return conn.execute(f"SELECT count(*) FROM sessions WHERE {where} AND NOT EXISTS "
                        "(SELECT 1 FROM messages m WHERE m.session_id = sessions.id)", args).fetchall()[0][0]


def _delete_vectors(conn, target):
    """Rows of each space's sqlite-vec table that belong to the purged messages."""
    tables = {int(name[4:]) for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'vec_[0-9]*' "
        "AND name NOT GLOB 'vec_*_*'")}
    if not tables:
        return
    load_vec(conn)
    sql, args = _local_sql(target, "c.id", _CHUNKS)
    for space_id in sorted(tables):
        conn.execute(f"DELETE FROM vec_{space_id} WHERE rowid IN ({sql} AND c.space_id = ?)", [*args, space_id])


def load_vec(conn):
    """Load sqlite-vec into ``conn`` (its vec0 tables cannot be written otherwise)."""
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        conn.load_extension(sqlite_vec.loadable_path())
    finally:
        conn.enable_load_extension(False)


def scrub(conn):
    """Leave no trace of deleted rows in the file: merge FTS, VACUUM, checkpoint the WAL away."""
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')")
    conn.execute("VACUUM")
    for _ in range(CHECKPOINT_TRIES):
        busy, _log, _done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0]
        if not busy:
            return True
        time.sleep(0.1)
    return False


# -- Postgres ------------------------------------------------------------------------

def ensure_tombstones(conn):
    """Make sure Postgres has the ``purges`` table: it is migration 0002, so apply what is pending."""
    from .sync import migrations

    migrations.migrate(conn)


def _pg_messages_sql(target):
    where, args = target.session_filter("c.session_id", "c.parent_session_id", "c.project_path", "%s")
    sql = f"SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE {where}"
    if target.before:
        sql += " AND (m.created_at IS NULL OR m.created_at <= %s::timestamptz)"
        args.append(target.before)
    return sql, args


def _has_store(conn):
    return conn.execute("SELECT to_regclass('conversations') IS NOT NULL").fetchone()[0]


def postgres_preview(conn, target):
    if not _has_store(conn):
        return {"conversations": 0, "messages": 0}
    sql, args = _pg_messages_sql(target)
    messages = conn.execute(f"SELECT count(*) FROM ({sql}) x", args).fetchone()[0]
    where, args = target.session_filter("session_id", "parent_session_id", "project_path", "%s")
    conversations = conn.execute(f"SELECT count(*) FROM conversations WHERE {where}", args).fetchone()[0]
    return {"conversations": conversations, "messages": messages}


def delete_postgres(conn, target):
    """Delete ``target`` from the canonical store (vectors cascade); returns the counts."""
    if not _has_store(conn):
        return {"conversations": 0, "messages": 0}
    sql, args = _pg_messages_sql(target)
    where, cargs = target.session_filter("session_id", "parent_session_id", "project_path", "%s")
    with conn.transaction():
        messages = conn.execute(f"DELETE FROM messages WHERE id IN ({sql})", args).rowcount
        conversations = conn.execute(
            f"DELETE FROM conversations WHERE {where} AND NOT EXISTS "
            "(SELECT 1 FROM messages m WHERE m.conversation_id = conversations.id)", cargs).rowcount
    return {"conversations": conversations, "messages": messages}


def purge_postgres(conn, target, created_at, machine=None):
    """Delete ``target`` in Postgres and record its tombstone for the other machines."""
    ensure_tombstones(conn)
    counts = delete_postgres(conn, target)
    conn.execute("INSERT INTO purges (kind, target, created_at, machine) VALUES (%s, %s, %s, %s)",
                 (target.kind, target.value, created_at, machine))
    return counts


# -- the queue and sync ------------------------------------------------------------------


def queue(conn, target, created_at):
    conn.execute("INSERT INTO purge_queue (kind, target, created_at) VALUES (?, ?, ?)",
                 (target.kind, target.value, created_at))


def queued(conn):
    return [{"id": i, "kind": k, "target": t, "created_at": c} for i, k, t, c in conn.execute(
        "SELECT id, kind, target, created_at FROM purge_queue ORDER BY id")]


def sync_purges(journal, store):
    """What ``chats sync`` runs before pushing (``store``: a ``PgStore`` or None).

    Pushes this journal's queued purges to Postgres, then applies every
    tombstone to this journal (so nothing purged elsewhere is pushed back) and
    deletes again in Postgres what a tombstone covers and an earlier push of
    another machine put back. Returns ``{"pushed", "applied"}`` counts.
    """
    if store is None:
        return {"pushed": 0, "applied": 0}
    conn, jconn = store.conn, journal.conn
    ensure_tombstones(conn)
    pushed = 0
    for row in queued(jconn):
        purge_postgres(conn, Target(row["kind"], row["target"]), row["created_at"], _machine())
        jconn.execute("DELETE FROM purge_queue WHERE id = ?", (row["id"],))
        pushed += 1
    return {"pushed": pushed, "applied": apply_tombstones(jconn, conn)}


def apply_tombstones(jconn, conn):
    """Apply Postgres' tombstones to the journal; returns how many removed something here."""
    seen = _seen(jconn)
    applied, dirty, last = 0, False, seen
    for tid, kind, value, created in conn.execute(
            "SELECT id, kind, target, created_at FROM purges ORDER BY id").fetchall():
        target = Target(kind, value, iso_utc(created))
        counts = purge_local(jconn, target, scrub_after=False)
        if counts["messages"]:
            applied, dirty = applied + 1, True
        if counts["messages"] or tid > seen:
            delete_postgres(conn, target)
        last = max(last, tid)
    if dirty:
        scrub(jconn)
    if last != seen:
        jconn.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)", (SEEN_STATE, str(last)))
    return applied


def _seen(jconn):
    rows = jconn.execute("SELECT value FROM state WHERE key = ?", (SEEN_STATE,)).fetchall()
    return int(rows[0][0]) if rows else 0


def iso_utc(moment):
    """A timestamptz as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (the transcripts' form, which SQLite reads)."""
    from datetime import timezone

    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _machine():
    from .localstore.writer import machine_name
    return machine_name()


# -- the command ----------------------------------------------------------------------------


@dataclass
class PurgeReport:
    target: str
    dry_run: bool
    local: dict = field(default_factory=dict)
    postgres: str = "not configured"      # "purged", "queued", "not configured", "would purge"
    postgres_counts: dict = field(default_factory=dict)
    postgres_error: str = None
    scrubbed: bool = False

    def as_dict(self):
        return asdict(self)


def purge(target, settings=None, dry_run=False, journal=None):
    """Purge ``target`` from the journal and Postgres (or queue it); ``dry_run`` only counts."""
    from . import config

    settings = settings or config.load()
    pg_conn, error = _connect(settings)
    report = PurgeReport(target.describe(), dry_run, postgres_error=error)
    own = journal is None
    if own:
        from .localstore.journal import Journal
        journal = Journal.open()
    try:
        return _run(report, target, journal.conn, pg_conn, settings, dry_run)
    finally:
        if pg_conn is not None:
            pg_conn.close()
        if own:
            journal.close()


def _run(report, target, jconn, pg_conn, settings, dry_run):
    if dry_run:
        report.local = local_preview(jconn, target)
        if pg_conn is not None:
            report.postgres, report.postgres_counts = "would purge", postgres_preview(pg_conn, target)
        elif settings.database_url:
            report.postgres = "would queue"
        return report
    created = now_iso()
    report.local = purge_local(jconn, target, scrub_after=False)
    if pg_conn is not None:
        try:
            report.postgres_counts = purge_postgres(pg_conn, target, created, _machine())
            report.postgres = "purged"
        except Exception as exc:  # noqa: BLE001 - lost mid-way: the queue makes the next sync finish it
            report.postgres_error = f"{type(exc).__name__}: {exc}"
            pg_conn = None
    if pg_conn is None and settings.database_url:
        queue(jconn, target, created)
        report.postgres = "queued"
    report.scrubbed = scrub(jconn)
    return report


def _connect(settings):
    """``(connection, None)`` to Postgres, ``(None, why)`` when unreachable, ``(None, None)`` unconfigured."""
    if not settings.database_url:
        return None, None
    from .errors import PostgresUnavailable
    from .sync import pg

    try:
        return pg.connect(settings.database_url, settings.allow_insecure_remote, register=False), None
    except PostgresUnavailable as exc:
        return None, str(exc)
