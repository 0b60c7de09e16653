"""``chats sync``: pending journal messages -> chunks -> vectors -> Postgres.

Per batch: embed what has no vectors yet (keeping them in the journal when a
local vector store is given), push conversations, then messages + vectors in
one Postgres transaction (``pgstore.store.PgStore.push``), then mark the messages
synced once that committed. Delivery is
at-least-once and every write is idempotent, so a crash (kill -9) at any
point loses nothing and duplicates nothing on the next run. Embedding
failures stop the run and leave the messages pending; Postgres being down
still lets the messages be embedded locally.
"""

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import psycopg

from .. import faults
from ..errors import PostgresError, PostgresUnavailable, ProviderError, SpaceMismatchError
from ..localstore import ftslengths, ftsparts, outbox, vectors
from ..localstore.db import drop_leftovers, reclaim
from ..models import canary_vector, check_canary, recipe_of
from ..models.recipe import embed_messages
from ..pgstore import rewrite
from ..pgstore.store import DEFAULT_INDEX_KIND
from ..purge import sync_purges
from ..records import Batch, VectorRow
from ..redact import original_span, redacted_span
from . import redactpool
from .pusher import Pusher

DEFAULT_BATCH = 500
EMBED_SLICE = 64     # messages embedded (and their vectors kept in the journal) at a time within a batch
DEFAULT_WORKERS = 2
# A backlog of at least DEFER_INDEX_MIN messages, and at least 1/DEFER_INDEX_RATIO of the
# vectors already indexed, loads without the HNSW index, which is rebuilt afterwards:
# pgvector inserts into a live HNSW graph at roughly a fifth of the rate it builds one.
# The full-text (GIN) index likewise when the backlog is at least 1/DEFER_TEXT_INDEX_RATIO
# of the messages stored: building it costs about half of keeping it up to date row by row
# (scripts/bench_sync.py), so rebuilding the whole table pays off only up to about that size.
DEFER_INDEX_MIN = 2_000
DEFER_INDEX_RATIO = 4
DEFER_TEXT_INDEX_RATIO = 1


KEYED_REDACTION_NOTE = ("the transcript lines kept for restore that earlier versions of claude-chats pushed to "
                        "Postgres may hold values named as secrets only by their JSON keys (\"password\": ...) in "
                        "clear; `chats redact --postgres` rewrites them (once, from any machine)")

PROGRESS_EVERY = 2.0   # seconds between two writes of the ``sync_progress`` state


@dataclass
class SyncProgress:
    """Where a running sync is: messages handled of those it found (pending, and pushed ones without
    vectors of the space), characters embedded of those it has to embed (after the recipe's per-kind
    limits), and the time left at the rate so far. ``chats status`` reads it from the journal's
    ``sync_progress`` state; ``chats sync`` on a terminal draws it."""

    messages_done: int = 0
    messages_total: int = 0
    chars_done: int = 0
    chars_total: int = 0
    started: float = field(default_factory=time.monotonic)
    at: str = ""            # when the run started (UTC)
    pid: int = 0
    step: str = ""          # what runs besides embedding and pushing (the full-text index split), for people

    @property
    def seconds(self):
        return time.monotonic() - self.started

    @property
    def eta(self):
        """Seconds left (None until something was embedded)."""
        if not self.chars_done:
            return None
        return max(0.0, self.seconds * (self.chars_total - self.chars_done) / self.chars_done)

    def as_dict(self):
        eta = self.eta
        return {"started_at": self.at, "pid": self.pid, "messages_done": self.messages_done,
                "messages_total": self.messages_total, "chars_done": self.chars_done, "chars_total": self.chars_total,
                "seconds": round(self.seconds, 1), "eta_seconds": None if eta is None else round(eta, 1),
                "step": self.step, "updated_at": _now()}


@dataclass
class SyncReport:
    pending_before: int = 0
    backfill_before: int = 0    # messages pushed before the configured space existed (see Syncer._backfill)
    backfilled: int = 0         # ... of those, embedded into it and their vectors pushed now
    embedded: int = 0           # messages embedded now
    chunks: int = 0             # vectors computed now
    embedded_chars: int = 0     # characters of content embedded now (the recipe's prefixes not counted)
    space: str = None           # key of the embedding space
    pushed: int = 0             # messages newly inserted in Postgres
    vectors_pushed: int = 0
    conversations: int = 0      # conversations inserted or updated
    raw_lines: int = 0          # transcript lines kept for restore, pushed now
    notes: list = field(default_factory=list)   # said once (see Syncer._note_keyed_redaction)
    purges: dict = field(default_factory=dict)  # purge tombstones pushed / applied, and what they removed here,
    #                                            those refused and those kept aside (see purge.sync_purges)
    batches: int = 0
    pending_after: int = 0
    postgres: str = "not configured"   # "ok", "not configured", "unreachable"
    errors: list = field(default_factory=list)
    index_rebuilt: bool = False  # the vector index was dropped for a bulk load and built again
    text_index_rebuilt: bool = False  # the full-text index, likewise
    index_seconds: float = 0.0   # of ``seconds``: (re)building and analysing those indexes
    messages_seconds: float = 0.0   # of ``seconds``: until every message and vector of the run was in Postgres
    #                                 (then the indexes are built while the kept lines, for restore, follow)
    fts_moved: int = 0           # messages moved into parts of the journal's full-text index (``ftsparts``)
    fts_merged: int = 0          # sealed parts of it merged into one segment each (``ftsparts.merge``)
    reclaimed: int = 0           # bytes of free pages given back to the file system (``db.reclaim``)
    texts_packed: int = 0        # messages whose text was packed (``outbox.pack_old_texts``), and the bytes it saved
    texts_saved: int = 0
    seconds: float = 0.0

    @property
    def ok(self):
        return not self.errors

    def as_dict(self):
        return {**asdict(self), "ok": self.ok}


def keep_fts_parts(journal, report, say=None):
    """The journal's full-text index kept in parts (``ftsparts.maintain``) at the end of every sync, one
    that embeds nothing too: a full head sealed, a part too big to merge quickly (a journal's whole index
    from before the parts) split, a committed step at a time (``say(text)`` after each: 106 s at 1M, once),
    and every sealed part merged into one segment (``ftsparts.merge``, steps of ``MERGE_PAGES``); then the
    lengths of the parts that changed kept for searches (``ftslengths.write``: ~0.1 s a part of 131,072)."""
    try:
        total, moved = ftsparts.to_move(journal.conn), 0

        def step(_part, n):
            nonlocal moved
            moved += n
            if say:
                say(f"full-text index into parts: {moved:,}/{total:,} messages (once)")
        report.fts_moved = ftsparts.maintain(journal.conn, step)
        merging = []

        def merged(part):
            if say and part not in merging:
                merging.append(part)
                say(f"full-text index: merging part {len(merging)} into one segment")
        report.fts_merged = ftsparts.merge_parts(journal.conn, merged)
        ftslengths.write(journal.conn)
    except Exception as exc:  # noqa: BLE001 - the index stays as it was: search and purge still work
        report.errors.append(f"keeping the full-text index in parts: {type(exc).__name__}: {exc}")


def pack_texts(journal, report, say=None):
    """The text of the messages older than a day packed (``outbox.pack_old_texts``) at the end of every sync, a
    transaction at a time (``say(text)`` after each): a year's journal once, then a day's messages a run."""
    def step(packed, seen):
        if say and packed:
            say(f"journal: {packed:,} old messages' text packed ({seen:,} looked at)")
    try:
        report.texts_packed, report.texts_saved = outbox.pack_old_texts(journal.conn, on_step=step)
    except Exception as exc:  # noqa: BLE001 - the texts stay as written: search and everything else still read them
        report.errors.append(f"packing old messages' text: {type(exc).__name__}: {exc}")


def give_back_space(journal, report, say=None):
    """The journal's free pages given back at the end of every sync (``db.reclaim``), a step at a time
    (``say(text)`` after each)."""
    def step(done, free):
        if say:
            say(f"journal: {done / 1e6:,.0f}/{free / 1e6:,.0f} MB of free pages given back")
    try:
        drop_leftovers(journal.conn)   # a heavy migration's old table, when a kill came before its drop
        report.reclaimed = reclaim(journal.conn, step)
    except Exception as exc:  # noqa: BLE001 - the pages stay free and are used again: nothing is lost
        report.errors.append(f"giving the journal's free pages back: {type(exc).__name__}: {exc}")


class Syncer:
    """One sync run over an open ``Journal``.

    ``provider`` embeds (an ``EmbeddingProvider``), ``store`` is a ``PgStore``
    or None (Postgres not configured or unreachable: embed only),
    ``local`` keeps vectors in the journal (``localstore.vectors.LocalVectors``) or None,
    ``redact`` cleans text before it leaves the machine, ``progress(SyncProgress)``
    is called after each slice embedded and each batch, ``workers`` is the number of
    Postgres connections pushing batches at once, ``index_kind`` ("ivfflat" or
    "hnsw") the vector index of a space created now.
    """

    defer_index_min, defer_index_ratio = DEFER_INDEX_MIN, DEFER_INDEX_RATIO
    defer_text_index_ratio = DEFER_TEXT_INDEX_RATIO

    def __init__(self, journal, provider, store=None, local=None, batch_size=DEFAULT_BATCH,
                 redact=None, progress=None, workers=DEFAULT_WORKERS, index_kind=DEFAULT_INDEX_KIND):
        self.journal, self.provider, self.store, self.local = journal, provider, store, local
        self.batch_size, self.redact, self.progress = max(1, int(batch_size)), redact, progress
        self.workers, self.index_kind = workers, index_kind
        self.report = SyncReport()
        self.space = self.space_id = self.canary = None
        self.status = SyncProgress(at=_now(), pid=os.getpid())
        self._shown = None   # when ``sync_progress`` was last written
        self._handled = 0    # messages of the batches done
        self._to_embed = None   # messages without vectors of the space (None: not counted)

    def run(self):
        started = time.monotonic()
        self.report.pending_before = outbox.pending_count(self.journal.conn)
        self.report.postgres = "ok" if self.store is not None else self.report.postgres
        deferred = finished = False
        try:
            self._sync_purges()   # first: a purge must not wait for the embedding model
            self._prepare_space()
            self._count_backfill()
            self._count_work()
            deferred = self._maybe_defer_index()
            self._batches()
            self._backfill()
            self.report.messages_seconds = round(time.monotonic() - started, 3)
            self._keep_index(busy=False)   # the tail folded at 1/64 once the run's vectors are in
            with self._indexing(deferred):   # on a connection of its own, while the kept lines go
                self._push_renamed_sessions()
                self._push_raw_lines()
            self._sync_purges()   # purged while this run pushed: what it may have put back goes again
            finished = True
            if self.store is not None and (self.report.pushed or self.report.vectors_pushed):
                self._pg(self.store.fold_tallies)
        except ProviderError as exc:
            self.report.errors.append(f"embedding failed, messages stay pending: {exc}")
        except (PostgresError, SpaceMismatchError) as exc:
            self.report.errors.append(str(exc))
        except BaseException as exc:  # Ctrl-C, SIGTERM, a bug: the run is still recorded, then it stops
            self.report.errors.append(_stopped(exc))
            self._close(started)
            raise
        keep_fts_parts(self.journal, self.report, self._say)   # also when the model or Postgres failed
        pack_texts(self.journal, self.report, self._say)
        give_back_space(self.journal, self.report, self._say)
        if deferred and not finished and self.report.postgres == "ok":
            self._rebuild_after_failure()
        self._close(started)
        return self.report

    def _close(self, started):
        try:
            self.report.pending_after = outbox.pending_count(self.journal.conn)
        except Exception:  # noqa: BLE001 - the journal is what failed: keep the count as it was
            self.report.pending_after = self.report.pending_before
        self.report.seconds = round(time.monotonic() - started, 3)
        self._record()

    # -- steps ------------------------------------------------------------------

    def _prepare_space(self):
        self.space = self.provider.space
        self.report.space = self.space.key
        self.canary = canary_vector(self.provider)
        if self.local is not None:
            self.local.prepare(self.space, self.canary)   # a legacy vector table is converted there
        if self.store is not None:
            self.space_id = self._pg(self.store.ensure_space, self.space, self.canary, self.index_kind)
            self._check_canary(self.space)

    def _keep_index(self, busy=True):
        """The journal's vector index kept in shape after vectors were written (``LocalVectors.maintain``);
        ``busy``: between batches (the tail is folded at a larger share, once the run is done at 1/64)."""
        if hasattr(self.local, "maintain"):
            self.local.maintain(busy=busy)

    def _check_canary(self, space):
        """Refuse to push into a space whose stored canary this model does not reproduce
        (same name, other weights: the vectors would not be comparable)."""
        stored = self._pg(self.store.space_canary, self.space_id)
        if stored is not None and len(stored) == len(self.canary):
            check_canary(space, stored, self.provider)

    def _outgoing(self, conversations):
        """Conversations as Postgres gets them: name, project path and git branch redacted like
        message text (a token pasted into a folder or branch name is a secret too).

        The journal's own rows keep the original (marking compares against them).
        """
        if self.redact is None:
            return conversations
        clean = lambda value: self.redact(value) if value else value  # noqa: E731
        return [c._replace(name=clean(c.name), project_path=clean(c.project_path), git_branch=clean(c.git_branch))
                for c in conversations]

    def _sync_purges(self):
        """Purges queued here go to Postgres; every machine's tombstones apply here, before pushing
        (and again after: a purge made during the run is undone in Postgres if the run pushed it)."""
        if self.store is not None:
            counts = self._pg(sync_purges, self.journal, self.store, self.redact)
            self.report.purges = {k: v if k not in self.report.purges else self.report.purges[k] + v
                                  for k, v in counts.items()}   # counts add up, lists of tombstones join

    def _maybe_defer_index(self):
        """Drop the indexes a bulk load would otherwise update row by row (see DEFER_INDEX_MIN):
        the space's vector index, and the full-text index for a load as big as the table.
        ``_finish_index`` rebuilds them; searches meanwhile scan. True when one was dropped.

        A least-privilege run-time role (not the tables' owner) loads into the live indexes.
        """
        if self.store is None or self.space_id is None:
            return False
        vectors = self.report.pending_before + self.report.backfill_before
        messages = self.report.pending_before
        dropped = False
        if vectors >= self.defer_index_min and \
                vectors * self.defer_index_ratio >= self._pg(self.store.vector_count, self.space_id) and \
                self._pg(self.store.owns_vectors, self.space_id):
            dropped = self._pg(self.store.drop_index, self.space_id)
        if messages >= self.defer_index_min and self.defer_text_index_ratio and \
                messages * self.defer_text_index_ratio >= self._pg(self.store.message_count) and \
                self._pg(self.store.owns_messages):
            dropped = self._pg(self.store.drop_text_index) or dropped
        return dropped

    def _finish_index(self, deferred, store=None):
        """Rebuild an index dropped for a bulk load (or by a crash during one); ANALYZE."""
        if self.store is None or self.space_id is None:
            return
        store = store or self.store
        started = time.monotonic()
        self.report.text_index_rebuilt = self._pg(store.ensure_text_index)
        self.report.index_rebuilt = self._pg(store.ensure_index, self.space_id)
        if deferred or self.report.vectors_pushed:
            self._pg(store.refresh_index, self.space_id)
        self.report.index_seconds = round(time.monotonic() - started, 3)

    @contextmanager
    def _indexing(self, deferred):
        """``_finish_index`` on a second connection while the block runs: the kept lines' redaction is
        this process's work, the index builds are Postgres', and on two cores they take the time of
        the longer instead of the sum (100k messages: 6 s of builds beside 14 s of redaction). Without
        a second connection, the builds run after the block. A build that fails raises here; one
        still running when the block is interrupted (Ctrl-C) is cancelled, and the next run makes it."""
        if self.store is None or self.space_id is None:
            yield
            return
        try:
            store = self.store.clone()
        except (psycopg.Error, PostgresError):   # (connections at their limit): one after the other
            yield
            self._finish_index(deferred)
            return
        failed = []

        def build():
            try:
                self._finish_index(deferred, store)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                failed.append(exc)

        worker = threading.Thread(target=build, name="chats-index", daemon=True)
        worker.start()
        try:
            yield
        except BaseException as exc:
            if not isinstance(exc, Exception):   # stopping: the build is not waited for
                store.conn.cancel_safe()
            raise
        finally:
            worker.join()
            store.close()
        if failed:
            raise failed[0]

    def _rebuild_after_failure(self):
        """A run that stopped after dropping indexes still rebuilds them, so searches do not scan
        until the next sync (which, with the backlog still there, may drop them again)."""
        try:
            self._finish_index(True)
        except PostgresError as exc:
            self.report.errors.append(f"rebuilding the indexes after the failure: {exc}")

    def _batches(self):
        if self.store is None and (self.local is None or not self._to_embed):
            # vectors would be neither pushed nor kept: nothing to do until Postgres is set up; or no
            # Postgres and every message already has its vectors here (counted, not read: the journal's
            # messages stay pending without Postgres, and reading them all costs seconds at 1M)
            return
        with Pusher(self.store, self.workers) as pusher:
            after_id = 0
            while True:
                rows = self.journal.pending(limit=self.batch_size, after_id=after_id)
                if not rows:
                    break
                self._one_batch(rows, pusher)
                after_id = rows[-1]["id"]
                self.report.batches += 1
                self._advance(len(rows))
            self._pg(pusher.drain)

    def _one_batch(self, rows, pusher):
        messages = outbox.as_messages(rows, self.redact)
        embedded = self._vectors(rows, messages)
        faults.point("after-embed")
        if self.store is None:
            return
        rows, messages = _still_stored(self.journal.conn, rows, messages)   # a purge while embedding
        if not rows:
            return
        conversations = outbox.conversations(self.journal.conn, {m.session_id for m in messages})
        batch = Batch(self._outgoing(conversations), messages, _chunks(rows, messages, embedded), self.space)
        self._pg(pusher.submit, batch, lambda result: self._pushed(rows, conversations, result))

    def _pushed(self, rows, conversations, result):
        """After the batch committed in Postgres: mark it synced in the journal."""
        faults.point("before-mark")
        missing = set(result.missing)
        self.journal.mark_synced([r["id"] for r in rows if r["uuid"] not in missing])
        outbox.mark_sessions_pushed(self.journal.conn, conversations)
        self.report.pushed += result.messages
        self.report.vectors_pushed += result.chunks
        self.report.conversations += result.conversations
        if missing:
            self.report.errors.append(f"{len(missing)} message(s) did not reach Postgres and stay pending")

    def _vectors(self, rows, messages):
        """``{message id: [models.Chunk]}`` of the batch: the journal's vectors when it has them, else
        embedded now, ``EMBED_SLICE`` messages at a time, each slice kept in the journal at once (a run
        interrupted mid-batch keeps what it embedded)."""
        ids = [r["id"] for r in rows]
        stored = self.local.load(ids) if self.local is not None else {}
        # a fork's copies are not searched, so not embedded: their text has vectors in the session it came from
        todo = [i for i, r in enumerate(rows) if r["id"] not in stored and not r["copy"]]
        fresh = {}
        for start in range(0, len(todo), EMBED_SLICE):
            part = todo[start:start + EMBED_SLICE]
            embedded = self._embed([rows[i] for i in part], [messages[i] for i in part])
            if self.local is not None:
                self.local.save(_spans_of_journal(rows, messages, embedded))
                self._keep_index()
            fresh.update(embedded)
            self._tell(within=part[-1] + 1)   # the batch's messages up to this slice's last are handled
        return {**_spans_of_journal(rows, messages, stored, back=True), **fresh}

    def _embed(self, rows, messages):
        """``{message id: [models.Chunk]}``: the messages embedded with the provider's recipe
        (``models.recipe``; the bare content when it has none)."""
        recipe = recipe_of(self.provider)
        previous = self._previous(rows, messages) if recipe is not None and recipe.previous_chars else {}
        items = [{"content": m.content, "role": r["role"], "kind": r["kind"], "created_at": r["created_at"],
                  "previous": previous.get(r["id"])} for r, m in zip(rows, messages)]
        embedded = dict(zip([r["id"] for r in rows], embed_messages(self.provider, items, recipe=recipe)))
        chars = sum(_embedded_chars(item, recipe) for item in items)
        self.report.embedded += len(rows)
        self.report.chunks += sum(len(p) for p in embedded.values())
        self.report.embedded_chars += chars
        self.status.chars_done += chars
        return embedded

    def _previous(self, rows, messages):
        """``{message id: {role, content}}``: the previous text message of each message's session,
        wherever it is in the journal (one query), its text redacted like the batch's."""
        here = {r["id"]: m.content for r, m in zip(rows, messages)}
        clean = self.redact or (lambda text: text)
        found = outbox.previous_messages(self.journal.conn, list(here))
        return {i: {"role": role, "content": here[p] if p in here else clean(content)}
                for i, (p, role, content) in found.items()}

    def _count_backfill(self):
        if self.store is not None and self.local is not None:
            self.report.backfill_before = vectors.count_unembedded(self.journal.conn, self.local.space_id,
                                                                   self._skipped())

    def _backfill(self):
        """Messages pushed before the configured space existed (another model or embedded text was
        configured then): embed them and push their vectors, not the messages again. The journal keeps
        a message's vectors only once Postgres has them, so a run cut short resumes where it stopped."""
        if not self.report.backfill_before:
            return
        with Pusher(self.store, self.workers) as pusher:
            after_id = 0
            while rows := vectors.unembedded(self.journal.conn, self.local.space_id, after_id, self.batch_size,
                                             self._skipped()):
                messages = outbox.as_messages(rows, self.redact)
                embedded = self._embed(rows, messages)
                faults.point("after-embed")
                batch = Batch([], [], _chunks(rows, messages, embedded), self.space)
                self._pg(pusher.submit, batch, lambda result, done=(rows, messages, embedded): self._backfilled(*done, result))
                after_id = rows[-1]["id"]
                self.report.batches += 1
                self._advance(len(rows))
            self._pg(pusher.drain)

    def _backfilled(self, rows, messages, embedded, result):
        """After a backfill batch committed in Postgres: keep its vectors in the journal."""
        faults.point("before-mark")
        self.local.save(_spans_of_journal(rows, messages, embedded))
        self._keep_index()
        self.report.backfilled += len(embedded)
        self.report.vectors_pushed += result.chunks

    def _skipped(self):
        """Kinds the provider's recipe embeds nothing of: a message of one never gets a vector."""
        recipe = recipe_of(self.provider)
        return recipe.skipped if recipe is not None else ()

    def _count_work(self):
        """What this run has to do, for its progress: the messages it will handle, and the characters
        it will embed (the messages without vectors of the space, after the recipe's limits)."""
        self.status.messages_total = self.report.pending_before + self.report.backfill_before
        if self.local is not None:
            recipe = recipe_of(self.provider)
            limits = recipe.limits if recipe is not None else ()
            self._to_embed, self.status.chars_total = vectors.backlog(self.journal.conn, self.local.space_id, limits)
        self._tell(force=True)

    def _say(self, step):
        self.status.step = step
        self._tell(force=True)

    def _advance(self, count):
        self._handled += count
        self._tell()

    def _tell(self, force=False, within=0):
        """Call ``progress`` (``within``: messages of the current batch handled so far); keep the progress
        in the journal (``sync_progress``) every PROGRESS_EVERY s."""
        self.status.messages_done = self._handled + within
        self.status.messages_total = max(self.status.messages_total, self.status.messages_done)
        self.status.chars_total = max(self.status.chars_total, self.status.chars_done)
        if self.progress:
            self.progress(self.status)
        now = time.monotonic()
        if force or self._shown is None or now - self._shown >= PROGRESS_EVERY:
            self._shown = now
            try:
                self.journal.set_state("sync_progress", json.dumps(self.status.as_dict()))
            except Exception:  # noqa: BLE001 - bookkeeping must not stop the sync
                pass

    def _push_renamed_sessions(self):
        """Sessions renamed (or otherwise changed) after their messages were pushed."""
        if self.store is None:
            return
        while True:
            sessions = outbox.unpushed_sessions(self.journal.conn, self.batch_size)
            if not sessions:
                return
            result = self._pg(self.store.push, Batch(self._outgoing(sessions), [], [], None))
            outbox.mark_sessions_pushed(self.journal.conn, sessions)
            self.report.conversations += result.conversations
            if len(sessions) < self.batch_size:
                return

    def _push_raw_lines(self):
        """The transcript lines kept for ``chats restore``: compressed here (the hook stores them as
        read), then pushed, redacted inside their JSON like message text. Lines of a session Postgres
        does not have yet (no message pushed) stay pending."""
        outbox.pack_raw_lines(self.journal.conn)
        outbox.refer_packed_lines(self.journal.conn)   # lines packed whole by a version before: a share a run
        if self.store is None:
            return
        self._note_keyed_redaction()
        conn = self.journal.conn
        backlog = outbox.pending_raw_line_count(conn, redactpool.POOL_MIN)
        with redactpool.Redactor(self.redact, backlog) as redactor:   # a big backlog: on every core
            rows = outbox.raw_line_rows(conn, self.batch_size)
            work = redactor.start([row[5] for row in rows])
            while rows:
                ids, lines = outbox.raw_line_records(rows, redactor.finish(work))
                rows = outbox.raw_line_rows(conn, self.batch_size, ids[-1])
                work = redactor.start([row[5] for row in rows])   # the workers go on while this batch goes
                homeless = set(self._pg(self.store.push_raw_lines, lines))
                outbox.mark_raw_lines_pushed(conn, [i for i, line in zip(ids, lines) if line.session_id not in homeless])
                self.report.raw_lines += sum(1 for line in lines if line.session_id not in homeless)
        if redactor.note:
            self.report.notes.append(redactor.note)

    def _note_keyed_redaction(self):
        """Once, at this journal's first sync of a version that redacts kept lines by their JSON keys: if
        it pushed lines before and Postgres holds some, they may hold such secrets in clear (the push
        never rewrites a line); the sync says so and ``chats status`` keeps saying it until ``chats
        redact --postgres`` ran here. Two queries, once."""
        conn = self.journal.conn
        if self.redact is None or outbox.keyed_redaction(conn) is not None:
            return
        pending = outbox.has_pushed_raw_lines(conn) and self._pg(rewrite.has_kept_lines, self.store.conn)
        outbox.set_keyed_redaction(conn, "pending" if pending else "checked")
        if pending:
            self.report.notes.append(KEYED_REDACTION_NOTE)

    # -- helpers ----------------------------------------------------------------

    def _pg(self, method, *args):
        """Call the store; a lost connection becomes PostgresUnavailable for the report."""
        try:
            return method(*args)
        except psycopg.OperationalError as exc:
            self.report.postgres = "unreachable"
            raise PostgresUnavailable(f"lost the connection to Postgres: {self.store.describe_error(exc)}") from None
        except psycopg.Error as exc:
            raise PostgresError(f"Postgres refused the push: {self.store.describe_error(exc)}") from None

    def _record(self):
        record(self.journal, self.report)


def _spans_of_journal(rows, messages, vectors, back=False):
    """``vectors`` ({message id: [models.Chunk]}, spans in the embedded text's coordinates) with the
    spans of redacted messages moved onto the journal's original text, where the journal keeps the
    vectors and search cuts excerpts (``back``: the journal's spans onto the redacted text, which
    Postgres holds). Messages without a secret are left as they are."""
    move = redacted_span if back else original_span
    out = dict(vectors)
    for r, m in zip(rows, messages):
        pieces = vectors.get(r["id"])
        if pieces and m.content != r["content"]:
            out[r["id"]] = [c._replace(start=a, end=b) for c in pieces
                            for a, b in [move(r["content"], c.start, c.end)]]
    return out


def _still_stored(conn, rows, messages):
    """The batch's rows and messages whose message is still in the journal."""
    kept = set(outbox.present(conn, [r["id"] for r in rows]))
    pairs = [(r, m) for r, m in zip(rows, messages) if r["id"] in kept]
    return [r for r, _ in pairs], [m for _, m in pairs]


def _stopped(exc):
    """The report's line for a run stopped by ``exc`` (an interrupt, or an error not foreseen)."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        return ("interrupted: the messages not pushed yet stay pending (their vectors computed so far "
                "are kept in the journal)")
    return f"stopped by an unexpected error, the messages not pushed stay pending: {type(exc).__name__}: {exc}"


def _chunks(rows, messages, vectors):
    """``records.VectorRow``s to push: ``vectors`` is {message id: [models.Chunk]}."""
    return [VectorRow(m.message_uuid, c.index, c.start, c.end, c.vector)
            for r, m in zip(rows, messages) for c in vectors.get(r["id"], ())]


def _embedded_chars(item, recipe):
    """Characters of a message's content its recipe embeds (all of it, or the head its kind is limited to)."""
    size = len(item["content"] or "")
    limit = recipe.limit(item.get("kind")) if recipe is not None and recipe.limits else None
    return size if limit is None else min(size, limit)


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def record(journal, report):
    """Keep the report as the journal's ``last_sync`` state (what ``chats status`` shows)."""
    state = {"at": _now(), **report.as_dict()}
    try:
        journal.set_state("last_sync", json.dumps(state))
    except Exception:  # noqa: BLE001 - bookkeeping must not hide the sync's own result
        pass
