"""The sync entry point: settings -> lock, journal, provider, Postgres -> ``Syncer``.

``run_sync()`` is what ``chats sync``, the hook's background start and the
scheduled job run. Library callers (tests, benchmarks) can pass the journal,
provider and store themselves.
"""

import contextlib
import signal
import threading

import apsw

from .. import config
from ..errors import PostgresUnavailable, ProviderError
from ..localstore import outbox, vectors
from ..localstore.journal import Journal
from ..models import is_remote
from ..purge import sync_purges
from ..redact import redact as redact_text
from ..stores import open_embedder, open_store
from .engine import (DEFAULT_BATCH, DEFAULT_INDEX_KIND, DEFAULT_WORKERS, Syncer, SyncReport, give_back_space,
                     keep_fts_parts, record)
from .lock import SyncLock


def run_sync(settings=None, journal=None, provider=None, store=None, local=None,
             batch_size=DEFAULT_BATCH, progress=None, redact=None, lock=True, workers=DEFAULT_WORKERS,
             index_kind=None):
    """Run one sync under the lock and return its ``SyncReport``.

    Anything not given is opened from ``settings`` (``config.load()``) and
    closed afterwards. ``index_kind``: the vector index of a new space in
    Postgres, "ivfflat" (``pgstore.store.DEFAULT_INDEX_KIND``) or "hnsw". Postgres unreachable: the
    messages are embedded locally and the report says so (the next run retries). Raises ``SyncLocked`` when
    another sync runs, ``InsecureConnectionError`` for a refused URL.
    """
    settings = settings or config.load()
    held = SyncLock().acquire() if lock else None
    opened = []
    try:
        journal = journal or _remember(opened, Journal.open())
        unreachable = None
        if store is None:
            try:
                store = _remember(opened, open_store(settings))
            except PostgresUnavailable as exc:
                unreachable = str(exc)
        # the indexes of what waits for Postgres, only while there is one (unreachable still counts). They
        # are an economy: the push reads what waits without them too (a scan), and the next sync tries again
        try:
            outbox.keep_pending_indexes(journal.conn, store is not None or unreachable is not None)
        except apsw.Error:
            pass
        try:
            provider = provider or _remember(opened, open_embedder(settings))
        except ProviderError as exc:
            return _failed(journal, f"no embedding model: messages stay pending, none is pushed until one is "
                                    f"set up: {exc}", unreachable, store, redactor(settings, None))
        local = local if local is not None else vectors.local_vectors(journal)
        redact = redact or redactor(settings, provider)
        report = Syncer(journal, provider, store, local, batch_size, redact, progress, workers,
                        index_kind or DEFAULT_INDEX_KIND).run()
        if unreachable:
            report.postgres = "unreachable"
            report.errors.insert(0, f"{unreachable} (messages embedded locally; the next sync retries)")
        return report
    finally:
        for thing in reversed(opened):
            thing.close()
        if held is not None:
            held.release()


@contextlib.contextmanager
def terminate_as_interrupt():
    """Within the block, SIGTERM stops the sync like Ctrl-C (``KeyboardInterrupt``): the run is
    recorded and what it embedded stays in the journal, instead of the process vanishing.
    For the entry points (``chats sync``, the background job); a no-op off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def redactor(settings, provider):
    """``redact.redact`` when text leaves the journal (Postgres, a remote embedding API), else None.

    Every Postgres counts: it is the canonical copy other machines read, even
    when it runs beside this journal.
    """
    if not settings.redact:
        return None
    if not (settings.database_url or is_remote(provider)):
        return None
    return redact_text


def _remember(opened, thing):
    if thing is not None:
        opened.append(thing)
    return thing


def _failed(journal, error, unreachable=None, store=None, clean=None):
    """The report of a sync that could not embed; purges still reach Postgres, the full-text index is kept
    in parts (``engine.keep_fts_parts``), and it is recorded."""
    pending = outbox.pending_count(journal.conn)
    report = SyncReport(pending_before=pending, pending_after=pending, errors=[error])
    if unreachable:
        report.postgres = "unreachable"
        report.errors.append(unreachable)
    elif store is not None:   # Postgres is there: what is missing is the model, and the report says that
        report.postgres = "ok"
    if store is not None:
        try:
            report.purges = sync_purges(journal, store, clean)
        except Exception as exc:  # noqa: BLE001 - psycopg's errors; reported, with the password scrubbed
            report.errors.append(store.describe_error(exc))
    keep_fts_parts(journal, report)
    give_back_space(journal, report)
    record(journal, report)
    return report