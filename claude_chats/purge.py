"""``chats purge``: remove conversations everywhere they are stored (orchestration only).

The journal's side is ``localstore.erase`` (rows, FTS, vectors, then the file
scrubbed), Postgres' side ``pgstore.purge`` (deletes and tombstones). When
Postgres is reachable the purge is applied there at once, else it waits in the
journal's ``purge_queue`` and the next ``chats sync`` applies it
(``sync_purges``). Either way a tombstone goes into Postgres, and every
machine's sync applies every tombstone to its own journal before pushing, so no
journal puts a purged conversation back.
"""

from dataclasses import asdict, dataclass, field

from . import config, times
from .errors import PostgresUnavailable
from .localstore import db, erase
from .localstore.erase import Target
from .localstore.journal import Journal
from .localstore.writer import machine_name
from .pgstore import purge as pgpurge
from .pgstore.connect import connect
from .redact import PLACEHOLDER, redact

PLACEHOLDER_MARK = PLACEHOLDER.partition("{")[0]   # "[REDACTED:"

SEEN_STATE = "purges_seen"


def sync_purges(journal, store, clean=None):
    """What ``chats sync`` runs before pushing (``store``: a ``PgStore`` or None).

    Pushes this journal's queued purges to Postgres, then applies every
    tombstone to this journal (so nothing purged elsewhere is pushed back) and
    deletes again in Postgres what a tombstone covers and an earlier push of
    another machine put back. Returns ``{"pushed", "applied"}`` counts.
    """
    if store is None:
        return {"pushed": 0, "applied": 0}
    conn, jconn = store.conn, journal.conn
    pgpurge.ensure_tombstones(conn)
    pushed = deleted = 0
    for row in erase.queued(jconn):
        counts = pgpurge.purge_postgres(conn, Target(row["kind"], row["target"]), row["created_at"], machine_name(),
                                        clean)
        jconn.execute("DELETE FROM purge_queue WHERE id = ?", (row["id"],))
        pushed, deleted = pushed + 1, deleted + counts["messages"] + counts["conversations"]
    applied, removed = apply_tombstones(jconn, conn)
    if deleted or removed:
        pgpurge.scrub(conn)   # the deleted rows' bytes, out of the data directory as far as this role may
    return {"pushed": pushed, "applied": applied}


def apply_tombstones(jconn, conn):
    """Apply Postgres' tombstones to the journal: (how many removed something here, rows deleted
    again in Postgres)."""
    seen = _seen(jconn)
    applied, removed, dirty, last = 0, 0, False, seen
    for tid, kind, value, created in pgpurge.tombstones(conn):
        target = Target(kind, value, pgpurge.iso_utc(created))
        counts = {"messages": 0}
        for here in _local_targets(jconn, target):
            counts["messages"] += erase.purge_local(jconn, here, scrub_after=False)["messages"]
        if counts["messages"]:
            applied, dirty = applied + 1, True
        if counts["messages"] or tid > seen:
            again = pgpurge.delete_postgres(conn, target)
            removed += again["messages"] + again["conversations"]
        last = max(last, tid)
    if dirty:
        erase.scrub_file(jconn)
    if last != seen:
        db.set_state(jconn, SEEN_STATE, str(last))
    return applied, removed


def _local_targets(jconn, target):
    """What a tombstone covers in this journal: itself, and for a project path stored redacted in
    Postgres (``[REDACTED:...]`` in place of a secret), the journal's project folders it stands for."""
    if target.kind != "project" or PLACEHOLDER_MARK not in target.value:
        return [target]
    prefix = target.value.rstrip("/") + "/"
    paths = [p for (p,) in jconn.execute("SELECT DISTINCT project_path FROM sessions WHERE project_path IS NOT NULL")]
    return [target] + [Target("project", p, target.before) for p in paths
                       if redact(p) == target.value or redact(p).startswith(prefix)]


def _seen(jconn):
    return int(db.get_state(jconn, SEEN_STATE) or 0)


# -- the command ----------------------------------------------------------------------------


@dataclass
class PurgeReport:
    target: str
    dry_run: bool
    local: dict = field(default_factory=dict)
    postgres: str = "not configured"      # "purged", "queued", "not configured", "would purge"
    postgres_counts: dict = field(default_factory=dict)
    postgres_error: str = None
    postgres_scrub: dict = field(default_factory=dict)   # pgstore.purge.scrub: {"done", "left"}
    scrubbed: bool = False

    def as_dict(self):
        return asdict(self)


def purge(target, settings=None, dry_run=False, journal=None):
    """Purge ``target`` from the journal and Postgres (or queue it); ``dry_run`` only counts."""
    settings = settings or config.load()
    pg_conn, error = _connect(settings)
    report = PurgeReport(target.describe(), dry_run, postgres_error=error)
    own = journal is None
    if own:
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
        report.local = erase.local_preview(jconn, target)
        if pg_conn is not None:
            report.postgres, report.postgres_counts = "would purge", pgpurge.postgres_preview(pg_conn, target)
        elif settings.database_url:
            report.postgres = "would queue"
        return report
    created = times.now_iso()
    report.local = erase.purge_local(jconn, target, scrub_after=False)
    if pg_conn is not None:
        try:
            report.postgres_counts = pgpurge.purge_postgres(pg_conn, target, created, machine_name(),
                                                            redact if settings.redact else None)
            report.postgres = "purged"
        except Exception as exc:  # noqa: BLE001 - lost mid-way: the queue makes the next sync finish it
            report.postgres_error = f"{type(exc).__name__}: {exc}"
            pg_conn = None
    if pg_conn is not None and any(report.postgres_counts.values()):
        try:
            report.postgres_scrub = pgpurge.scrub(pg_conn)
        except Exception as exc:  # noqa: BLE001 - the rows are deleted; only the cleanup of their bytes failed
            report.postgres_scrub = {"done": [], "left": [f"cleaning up the deleted rows failed: "
                                                          f"{type(exc).__name__}: {exc}"]}
    if pg_conn is None and settings.database_url:
        erase.queue(jconn, target, created)
        report.postgres = "queued"
    report.scrubbed = erase.scrub_file(jconn)
    return report


def _connect(settings):
    """``(connection, None)`` to Postgres, ``(None, why)`` when unreachable, ``(None, None)`` unconfigured."""
    if not settings.database_url:
        return None, None
    try:
        return connect(settings.database_url, settings.allow_insecure_remote, register=False), None
    except PostgresUnavailable as exc:
        return None, str(exc)
