"""Purging the canonical store: deletes, and the tombstones every machine applies.

``purge_postgres(conn, target, created_at, machine)`` deletes what a
``localstore.erase.Target`` covers (vectors cascade) and records a tombstone in
Postgres' ``purges`` table (sql/0002_purges.sql). Every machine's sync applies
every tombstone to its own journal before pushing (``purge.sync_purges``), so
no journal puts a purged conversation back. A tombstone covers what was
written up to its time: a session continued after the purge keeps its new
messages.
"""

from datetime import timezone

from . import migrations


def ensure_tombstones(conn):
    """Make sure Postgres has the ``purges`` table: it is migration 0002, so apply what is pending."""
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
        _delete_kept_lines(conn, target)
        messages = conn.execute(f"DELETE FROM messages WHERE id IN ({sql})", args).rowcount
        conversations = conn.execute(
            f"DELETE FROM conversations WHERE {where} AND NOT EXISTS "
            "(SELECT 1 FROM messages m WHERE m.conversation_id = conversations.id)", cargs).rowcount
    return {"conversations": conversations, "messages": messages}


def _delete_kept_lines(conn, target):
    """The transcript lines kept for restore of the conversations ``target`` covers (up to its time)."""
    if not conn.execute("SELECT to_regclass('raw_lines') IS NOT NULL").fetchone()[0]:
        return
    where, args = target.session_filter("c.session_id", "c.parent_session_id", "c.project_path", "%s")
    sql = f"DELETE FROM raw_lines r USING conversations c WHERE r.conversation_id = c.id AND {where}"
    if target.before:
        sql += " AND (r.created_at IS NULL OR r.created_at <= %s::timestamptz)"
        args.append(target.before)
    conn.execute(sql, args)


def purge_postgres(conn, target, created_at, machine=None):
    """Delete ``target`` in Postgres and record its tombstone for the other machines."""
    ensure_tombstones(conn)
    counts = delete_postgres(conn, target)
    conn.execute("INSERT INTO purges (kind, target, created_at, machine) VALUES (%s, %s, %s, %s)",
                 (target.kind, target.value, created_at, machine))
    return counts


def tombstones(conn):
    """``[(id, kind, target, created_at)]`` of every tombstone, oldest first."""
    return conn.execute("SELECT id, kind, target, created_at FROM purges ORDER BY id").fetchall()


def iso_utc(moment):
    """A timestamptz as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (the transcripts' form, which SQLite reads)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
