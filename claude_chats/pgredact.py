"""``chats redact --postgres``: the transcript lines Postgres already keeps, redacted as this version
pushes them (orchestration only).

Versions before issue 21 redacted a kept line's strings but not the values their JSON keys name
as secrets (``"password": ...``), and the push never rewrites a line Postgres has (``ON CONFLICT
DO NOTHING``). This reads every kept line of Postgres (``pgstore.rewrite``), runs it through
``rawlines.redact_packed`` with ``redact.redact`` (what ``chats sync`` does before a push, so a line
ends as this version would push it), writes back the rows whose bytes change, then removes the
old bytes from the data directory as far as the role may (``pgstore.purge.scrub``: ``VACUUM FULL
raw_lines``, ``CHECKPOINT``...) and says what stays. Message text is not read: it was redacted
before every push. A second run rewrites nothing; a run killed midway is finished by the next. Done,
it marks this journal's note (``localstore.outbox.keyed_redaction``: the first sync of this version
says that earlier pushes may hold such secrets, ``chats status`` until this ran) as done.
"""

import os
import re
from collections import Counter

from . import config, paths, rawlines
from .localstore import outbox
from .localstore.journal import Journal
from .pgstore import purge as pgpurge
from .pgstore import rewrite
from .pgstore.connect import connect
from .redact import redact

PLACEHOLDERS = re.compile(rb"\[REDACTED:([a-z0-9_-]{1,40})\]")
TABLES = ("raw_lines",)


def redact_postgres(settings=None, dry_run=False, on_batch=None, on_start=None):
    """Redact the kept lines of the configured Postgres; ``dry_run`` only counts.

    ``on_start(estimated rows)`` once, ``on_batch(rows read)`` after each batch (a progress bar).
    Returns ``{"dry_run", "read", "rewritten", "linked", "unreadable", "placeholders": {kind: n},
    "scrub": {"done", "left"}}``; ``PostgresUnavailable`` when Postgres is not configured or not
    reached (one line)."""
    settings = settings or config.load()
    conn = connect(settings.database_url, settings.allow_insecure_remote, register=False)
    try:
        report = _run(conn, dry_run, on_batch, on_start)
    finally:
        conn.close()
    if not dry_run and os.path.exists(paths.journal_path()):   # `chats status` stops saying it (see outbox)
        with Journal.open() as journal:
            outbox.set_keyed_redaction(journal.conn, "done")
    return report


def _run(conn, dry_run, on_batch, on_start):
    report = {"dry_run": dry_run, "read": 0, "rewritten": 0, "linked": 0, "unreadable": 0, "placeholders": {},
              "scrub": {"done": [], "left": []}}
    if not rewrite.has_kept_lines(conn):
        return report
    if on_start is not None:
        on_start(rewrite.estimated_lines(conn))
    kinds = Counter()
    clean = rawlines.remembering(redact)

    def count(old, new):
        if new is not None:
            kinds.update(_placeholders(new) - _placeholders(old))

    report.update(rewrite.redact_kept_lines(conn, lambda blob: rawlines.redact_packed(blob, clean), dry_run,
                                            on_batch=on_batch, on_change=count))
    report["placeholders"] = dict(kinds.most_common())
    if not dry_run:   # also after a run killed before its scrub: this one rewrote nothing, the old bytes remain
        report["scrub"] = pgpurge.scrub(conn, TABLES, vectors=False, rows="the lines as they were before",
                                        event="the rewrite")
    return report


def _placeholders(blob):
    return Counter(m.decode() for m in PLACEHOLDERS.findall(rawlines.unpack(blob)))
