"""Purging the canonical store: deletes, and the tombstones every machine applies.

``purge_postgres(conn, target, created_at, machine)`` deletes what a
``localstore.erase.Target`` covers (vectors cascade) and records a tombstone in
Postgres' ``purges`` table (sql/0002_purges.sql; sql/0006 refuses one dated ahead).
Every machine's sync judges every tombstone and applies those that look like a
person's purge to its own journal before pushing (``purge.sync_purges``), so
no journal puts a purged conversation back. A tombstone covers what was
written up to its time: a session continued after the purge keeps its new
messages.

A DELETE leaves the rows' bytes in the table files (dead rows, then free space)
and in the WAL. ``scrub(conn)`` then does what this role may: ``VACUUM FULL``
of the tables holding text (a new file each; the old one is unlinked), fresh
statistics and ``VACUUM FULL pg_statistic`` (ANALYZE keeps sampled values),
``CHECKPOINT``, ``pg_switch_wal()`` and ``CHECKPOINT`` again (the segments
holding the old rows are left behind the redo point and removed, or renamed
for reuse with ``wal_recycle = on``), and says what remains and why.
"""

from dataclasses import replace
from datetime import timezone

import psycopg

from . import migrations

TEXT_TABLES = ("messages", "conversations", "raw_lines")   # content, names, paths, branches, kept lines
SCRUB_LOCK_TIMEOUT = "10s"   # VACUUM FULL waits this long for the tables, else it is left to later


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


def purge_postgres(conn, target, created_at, machine=None, clean=None):
    """Delete ``target`` in Postgres and record its tombstone for the other machines.

    ``clean`` (``redact.redact`` when sync redacts) is how a project path reaches Postgres: the
    target is deleted as typed and as stored, and the tombstone keeps the stored form, so no
    secret in a folder name reaches Postgres through a purge either."""
    ensure_tombstones(conn)
    counts = delete_postgres(conn, target)
    stored = as_stored(target, clean)
    if stored != target:
        counts = {k: v + w for (k, v), w in zip(counts.items(), delete_postgres(conn, stored).values())}
    # dated by the earlier clock, this machine's or the server's: never ahead of what sql/0006 allows
    conn.execute("INSERT INTO purges (kind, target, created_at, machine) VALUES (%s, %s, least(%s::timestamptz, "
                 "now()), %s)", (stored.kind, stored.value, created_at, machine))
    return counts


def as_stored(target, clean):
    """``target`` as Postgres holds it: a project path through ``clean`` (session ids are kept)."""
    if clean is None or target.kind != "project":
        return target
    return replace(target, value=clean(target.value))


TOMBSTONE_CHARS = 4096   # of a target, read: a longer one is refused whole (its length says so)
MACHINE_CHARS = 200


def tombstones(conn):
    """``[(id, kind, target, created_at, machine)]`` of every tombstone, oldest first, as another
    machine (or anyone who may INSERT) wrote them: a target read up to ``TOMBSTONE_CHARS + 1``
    characters, a date that is not finite (``infinity``) as None."""
    return conn.execute(
        f"SELECT id, coalesce(left(kind, 20), ''), coalesce(left(target, {TOMBSTONE_CHARS + 1}), ''), "
        f"CASE WHEN isfinite(created_at) THEN created_at END, left(machine, {MACHINE_CHARS}) "
        "FROM purges ORDER BY id").fetchall()


def server_now(conn):
    """The server's clock: the one time every machine sharing the database sees alike."""
    return conn.execute("SELECT now()").fetchone()[0]


def iso_utc(moment):
    """A timestamptz as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (the transcripts' form, which SQLite reads)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# -- leaving no bytes behind ---------------------------------------------------------------


def scrub(conn, tables=TEXT_TABLES, vectors=True, rows="the deleted rows", event="the purge"):
    """After a purge deleted rows (or ``chats redact --postgres`` rewrote them: ``tables``, without
    ``vectors``): remove their old bytes from the data directory as far as this role may (see the
    module docstring). ``conn`` is autocommit. ``rows`` and ``event`` name them in the report.
    Returns ``{"done": [...], "left": [...]}``: what ran, and what remains with the reason (a
    privilege, the server's settings)."""
    done, left = [], []
    superuser = _superuser(conn)
    names = ", ".join(tables)
    if _may_maintain(conn, tables, superuser):
        if _vacuum(conn, f"VACUUM (FULL, ANALYZE) {names}", left):
            done.append(f"VACUUM FULL {names}")
        found = _vector_tables(conn) if vectors else []
        if found and not _may_maintain(conn, found, superuser):
            left.append(f"the purged messages' vectors (numbers, not text) stay in dead rows of {', '.join(found)} "
                        "until autovacuum: this role may not VACUUM them")
        elif found and _vacuum(conn, f"VACUUM {', '.join(found)}", left):
            done.append("VACUUM " + ", ".join(found))
    else:
        also = ", and their vectors in the vector tables" if vectors else ""
        left.append(f"{rows} stay in the files of {names}{also} (dead rows until autovacuum, then free space until "
                    f"overwritten): this role does not own them; the owner removes them with VACUUM FULL {names}")
    if superuser:
        if _vacuum(conn, "VACUUM FULL pg_statistic", left):
            done.append("VACUUM FULL pg_statistic")
    else:
        left.append(f"values ANALYZE sampled before {event} stay in dead rows of pg_statistic until "
                    "autovacuum and in its free space after (a superuser runs VACUUM FULL pg_statistic)")
    _flush_wal(conn, done, left, rows)
    return {"done": done, "left": left}


def _superuser(conn):
    return bool(conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0])


def _may_maintain(conn, tables, superuser):
    """Whether this role may VACUUM ``tables``: a superuser, their owner, or (PostgreSQL 17) MAINTAIN."""
    if superuser:
        return True
    for table in tables:
        owned = conn.execute("SELECT pg_has_role(current_user, tableowner, 'USAGE') FROM pg_tables "
                             "WHERE schemaname = current_schema() AND tablename = %s", (table,)).fetchone()
        if owned and owned[0]:
            continue
        try:
            if not conn.execute("SELECT has_table_privilege(%s, 'MAINTAIN')", (table,)).fetchone()[0]:
                return False
        except psycopg.errors.InvalidParameterValue:   # before PostgreSQL 17: no MAINTAIN privilege
            return False
    return True


def _vector_tables(conn):
    return [r[0] for r in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename ~ '^vectors_[0-9]+$' "
        "ORDER BY tablename")]


def _vacuum(conn, sql, left):
    conn.execute(f"SET lock_timeout = '{SCRUB_LOCK_TIMEOUT}'")
    try:
        conn.execute(sql)
        return True
    except psycopg.errors.LockNotAvailable:
        left.append(f"{sql} did not run: the tables were busy for {SCRUB_LOCK_TIMEOUT} (a sync or a long "
                    "query); running the command again runs it, or run it as the owner")
        return False
    except psycopg.errors.InsufficientPrivilege as exc:
        left.append(f"{sql} was refused: {_first_line(exc)}")
        return False
    finally:
        conn.execute("RESET lock_timeout")


def _flush_wal(conn, done, left, rows):
    """CHECKPOINT, switch to a new WAL segment, CHECKPOINT: the segments that hold the deleted rows
    (their inserts, the DELETE's page images) fall behind the redo point and are removed or recycled."""
    for sql in ("CHECKPOINT", "SELECT pg_switch_wal()", "CHECKPOINT"):
        try:
            conn.execute(sql)
        except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectNotInPrerequisiteState) as exc:
            left.append(f"the WAL still holds {rows} until the server's next checkpoints pass them "
                        f"(checkpoint_timeout, 5 min by default, and max_wal_size of later writes): "
                        f"{sql} was refused ({_first_line(exc)}; CHECKPOINT needs pg_checkpoint, "
                        "pg_switch_wal a superuser or EXECUTE on it)")
            return
    done.append("CHECKPOINT, pg_switch_wal, CHECKPOINT")
    recycle, archive = (conn.execute(f"SELECT current_setting('{name}')").fetchone()[0]
                        for name in ("wal_recycle", "archive_mode"))
    if recycle == "on":
        left.append("old WAL segments are renamed for reuse (wal_recycle = on): their bytes stay until later "
                    "writes overwrite them (about min_wal_size, 80 MB by default); wal_recycle = off removes them")
    if archive != "off":
        left.append("the WAL archive (archive_mode is on) and any base backup keep their copies")


def _first_line(exc):
    return " ".join(str(exc).split()) or type(exc).__name__
