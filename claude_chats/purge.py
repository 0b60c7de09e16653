"""``chats purge``: remove conversations everywhere they are stored (orchestration only).

The journal's side is ``localstore.erase`` (rows, FTS, vectors, then the file
scrubbed), Postgres' side ``pgstore.purge`` (deletes and tombstones). When
Postgres is reachable the purge is applied there at once, else it waits in the
journal's ``purge_queue`` and the next ``chats sync`` applies it
(``sync_purges``). Either way a tombstone goes into Postgres, and the journal
keeps one too (the hook and ``chats import`` consult it: a purged session does not
come back when its file is read again).

A tombstone in Postgres is anyone's INSERT, so every machine's sync judges each
one once (``apply_tombstones``): refused when dated ahead of the server's clock or
naming too wide a folder, kept aside for ``chats purge --apply-remote`` when more
than ``CONFIRM_ABOVE`` sessions a day would go, else applied to what was written
before this machine saw it; the sync says what each removed, refused or held.
"""

import os
import posixpath
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, timezone

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

# A tombstone from Postgres is anyone's INSERT (any role that may write, the run-time role
# included), so before it deletes anything here it must look like a person's deliberate purge:
CLOCK_SKEW = timedelta(minutes=10)   # dated later than the server's clock plus this: refused. NTP
#   keeps clocks within a second; ten minutes allows an unsynchronised laptop and still refuses the
#   "dated in the future" row that would cover every session recorded until that date.
CONFIRM_ABOVE = 5                     # sessions (subagents not counted) that Postgres' tombstones may
CONFIRM_WINDOW = timedelta(hours=24)  # remove here within a day before they wait for the person
#   (`chats purge --apply-remote`): a person purges a session, or a project of a few; more than five
#   at once from another machine is what a mistake or an attacker does, and a confirmation is cheap.
SESSION_CHARS = 256                   # a session id longer than this is not one Claude Code wrote
HOME_ROOTS = ("home", "Users")        # /home/<user>, /Users/<user>: a whole home is too wide as well
SHOWN_CHARS = 120                     # a target or machine name as the sync's output shows it


def sync_purges(journal, store, clean=None, now=None):
    """What ``chats sync`` runs before pushing (``store``: a ``PgStore`` or None).

    Pushes this journal's queued purges to Postgres, then applies the
    tombstones of Postgres to this journal (so nothing purged elsewhere is pushed back) and
    deletes again in Postgres what a tombstone covers and an earlier push of
    another machine put back. Returns ``{"pushed", "applied", "removed", "quarantined",
    "pending"}``: counts, then what the tombstones removed here, those refused and why, and those
    kept aside for the person to confirm (see ``apply_tombstones``).
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
    outcome, removed = apply_tombstones(jconn, conn, now)
    if deleted or removed:
        pgpurge.scrub(conn)   # the deleted rows' bytes, out of the data directory as far as this role may
    return {"pushed": pushed, **outcome}


def apply_tombstones(jconn, conn, now=None):
    """Apply Postgres' tombstones to the journal; ``(outcome, rows deleted again in Postgres)``.

    Each row of ``purges`` is judged once (the journal keeps it, ``erase.remember``): refused
    (``refusal``: dated in the future, a target that takes everything or too much) and kept as
    quarantined; held as pending when, with what Postgres' tombstones removed here in the last
    ``CONFIRM_WINDOW``, they would remove more than ``CONFIRM_ABOVE`` sessions; else applied, and
    covering what was written up to the earlier of its date and this machine's clock (a row dated
    ahead never covers what is recorded later here). The date is judged against the server's
    clock, which no machine's role can set and every machine sees alike (a machine whose own clock
    is slow does not refuse a fresh tombstone). The journal's tombstones in force apply again at
    every sync.
    ``outcome``: ``{"applied": n, "removed": [...], "quarantined": [...], "pending": [...]}``.
    """
    now, server = now or datetime.now(timezone.utc), pgpurge.server_now(conn)
    seen, known = _seen(jconn), erase.remote_ids(jconn)
    outcome = {"applied": 0, "removed": [], "quarantined": [], "pending": []}
    fresh, last = [], seen
    for tid, kind, value, created, machine in pgpurge.tombstones(conn):
        last = max(last, tid)
        if tid in known:
            continue
        why = refusal(kind, value, created, server)
        target = Target(kind, value, pgpurge.iso_utc(min(created, now) if created is not None else now))
        if why:
            erase.remember(jconn, target, "quarantined", tid, machine, why)
            outcome["quarantined"].append({**described(target, machine), "reason": why})
            continue
        targets = _local_targets(jconn, target)
        fresh.append((tid, target, machine, targets, *_covered(jconn, targets)))
    coming = sum(f[4] for f in fresh)
    recent = erase.remote_sessions_since(jconn, pgpurge.iso_utc(now - CONFIRM_WINDOW), confirmed=False)
    hold = coming and recent + coming > CONFIRM_ABOVE
    removed, dirty, mine = 0, False, set()
    for tid, target, machine, targets, sessions, messages in fresh:
        if hold:
            why = (f"with the others of this sync it would remove {coming} sessions here ({recent} removed by "
                   f"tombstones from Postgres in the last {CONFIRM_WINDOW.days * 24} h; more than {CONFIRM_ABOVE} "
                   "wait for `chats purge --apply-remote`)")
            erase.remember(jconn, target, "pending", tid, machine, why, sessions, messages)
            outcome["pending"].append({**described(target, machine), "sessions": sessions, "messages": messages})
            continue
        erase.remember(jconn, target, "applied", tid, machine, None, sessions, messages)
        for extra in targets[1:]:   # a redacted project path: the journal's folders it stands for
            erase.remember(jconn, extra, "applied", None, machine)
        mine.update(targets)
        here = _purge_here(jconn, targets)
        if here["messages"]:
            outcome["applied"] += 1
            dirty = True
            outcome["removed"].append({**described(target, machine), "sessions": sessions, **here})
        if here["messages"] or tid > seen:
            again = pgpurge.delete_postgres(conn, target)
            removed += again["messages"] + again["conversations"]
    for row in erase.tombstones(jconn, "applied"):   # in force here: what came back since is removed again
        target = Target(row["kind"], row["target"], row["before"])
        if target in mine:
            continue
        here = _purge_here(jconn, [target])
        if here["messages"]:
            dirty = True
            if row["remote_id"] is not None:
                again = pgpurge.delete_postgres(conn, target)
                removed += again["messages"] + again["conversations"]
    if dirty:
        erase.scrub_file(jconn)
    if last != seen:
        db.set_state(jconn, SEEN_STATE, str(last))
    return outcome, removed


def _covered(jconn, targets):
    """(sessions, messages) the targets cover here: sessions as a person counts them (no subagents)."""
    sessions = sum(erase.sessions_covered(jconn, t) for t in targets)
    messages = sum(erase.local_preview(jconn, t)["messages"] for t in targets)
    return sessions, messages


def _purge_here(jconn, targets):
    counts = {"messages": 0, "conversations": 0}
    for target in targets:
        done = erase.purge_local(jconn, target, scrub_after=False)
        counts["messages"] += done["messages"]
        counts["conversations"] += done["sessions"]
    return counts


def refusal(kind, value, created, now, home=None):
    """Why a tombstone from Postgres must not be applied here, in one line (None: it may be).

    Refused: a kind this version does not know; an empty target, or one holding control characters
    (NUL, a newline, ESC); a date that is missing, not finite, or later than ``now`` (the server's) plus
    ``CLOCK_SKEW``; a session id longer than ``SESSION_CHARS``; a project path that is not absolute
    and normal as ``chats purge`` writes it (``Target.of``: no trailing ``/``, no ``//``, ``.``
    or ``..``), or one that takes too much: fewer than two folders below ``/`` (three below
    ``/home`` and ``/Users``), or this machine's home folder or a folder above it. The target is
    compared as text (``=`` and a prefix), so ``*``, ``?`` or ``%`` in it match only themselves.
    """
    if kind not in erase.KINDS:
        return f"unknown kind {shown(kind)!r}"
    if not value or not value.strip():
        return "empty target"
    if not value.isprintable():
        return "control characters in its target"
    if created is None:
        return "no finite date"
    if created > now + CLOCK_SKEW:
        return (f"dated {pgpurge.iso_utc(created)}, more than {CLOCK_SKEW.seconds // 60} min ahead of the "
                "server's clock")
    if kind == "session":
        return f"a session id of {len(value)} characters" if len(value) > SESSION_CHARS else None
    if len(value) > pgpurge.TOMBSTONE_CHARS:
        return "a project path longer than 4096 characters"
    if not value.startswith("/") or value.startswith("//") or posixpath.normpath(value) != value:
        return "not a normal absolute path (relative, a trailing '/', '//', '.' or '..')"
    parts = value[1:].split("/")
    need = 3 if parts[0] in HOME_ROOTS else 2
    if len(parts) < need:
        return f"too wide: fewer than {need} folders below /, it would remove every project below it"
    home = (home or os.path.expanduser("~")).rstrip("/")
    if home and (value == home or home.startswith(value + "/")):
        return "too wide: this machine's home folder (or a folder above it)"
    return None


def described(target, machine):
    """A tombstone as the sync's output shows it: kind, target and machine redacted, on one line, bounded."""
    return {"kind": shown(target.kind), "target": shown(target.value), "machine": shown(machine)}


def shown(text, limit=SHOWN_CHARS):
    """``text`` (from Postgres: anyone's) redacted, every control character as ``?``, at most ``limit``."""
    text = "".join(c if c.isprintable() else "?" for c in redact(str(text or "")[:pgpurge.TOMBSTONE_CHARS]))
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


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
    erase.remember(jconn, replace(target, before=created))   # the hook and `chats import` consult it
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


# -- tombstones from Postgres kept aside (chats purge --apply-remote) -------------------------


def apply_remote(settings=None, dry_run=False, journal=None):
    """Apply the tombstones from Postgres that a sync kept aside (too many sessions at once; see
    ``apply_tombstones``), or with ``dry_run`` list them with what they would remove now.
    Returns ``{"dry_run", "tombstones": [...], "sessions", "messages", "postgres", "scrubbed"}``."""
    settings = settings or config.load()
    own = journal is None
    if own:
        journal = Journal.open()
    try:
        return _apply_remote(journal.conn, settings, dry_run)
    finally:
        if own:
            journal.close()


def _apply_remote(jconn, settings, dry_run):
    held = []
    for row in erase.tombstones(jconn, "pending"):
        target = Target(row["kind"], row["target"], row["before"])
        targets = _local_targets(jconn, target)
        sessions, messages = _covered(jconn, targets)
        held.append((row, target, targets, {**described(target, row["machine"]), "sessions": sessions,
                                            "messages": messages}))
    report = {"dry_run": dry_run, "tombstones": [h[3] for h in held], "sessions": sum(h[3]["sessions"] for h in held),
              "messages": sum(h[3]["messages"] for h in held), "postgres": "not configured", "scrubbed": False}
    if dry_run or not held:
        return report
    for row, target, targets, shown_row in held:
        for extra in targets[1:]:
            erase.remember(jconn, extra, "applied", None, row["machine"])
        _purge_here(jconn, targets)
        erase.mark_applied(jconn, row["id"], shown_row["sessions"], shown_row["messages"])
    report["postgres"] = _delete_remote(settings, [h[1] for h in held])
    report["scrubbed"] = erase.scrub_file(jconn)
    return report


def _delete_remote(settings, targets):
    """The confirmed tombstones' rows deleted in Postgres too (what a push put back); the outcome in words."""
    conn, error = _connect(settings)
    if conn is None:
        return f"not reached ({error})" if error else "not configured"
    try:
        deleted = sum(sum(pgpurge.delete_postgres(conn, t).values()) for t in targets)
        return f"deleted {deleted} rows covered by these tombstones"
    finally:
        conn.close()


def _connect(settings):
    """``(connection, None)`` to Postgres, ``(None, why)`` when unreachable, ``(None, None)`` unconfigured."""
    if not settings.database_url:
        return None, None
    try:
        return connect(settings.database_url, settings.allow_insecure_remote, register=False), None
    except PostgresUnavailable as exc:
        return None, str(exc)
