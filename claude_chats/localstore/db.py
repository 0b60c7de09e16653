"""Opening the journal: one SQLite file, WAL, busy timeout, owner-only, migrated.

Stdlib + apsw only: the hook opens the journal on every turn.
"""

import os
import stat
import time

import apsw

from . import stamps, texts, uuids

MIGRATIONS_DIR = os.path.join(os.path.dirname(__file__), "migrations")
BUSY_TIMEOUT_MS = 15_000
PAGE_SIZE = 16_384   # a new journal's pages: rows of 1-2 KB (messages, kept lines) fill 4 KB pages ~75 %; at
#   16 KB the 100k-message scale corpus takes 3,555 bytes a message against 3,883 (scripts/bench_journal_size.py)


RECLAIM_MIN = 16 << 20    # free bytes from which a sync gives a journal's free pages back (``reclaim``)
RECLAIM_STEP = 4096       # pages a transaction gives back: the hook waits for no more than one step


def reclaim(conn, done=None):
    """Give the journal's free pages back to the file system (``PRAGMA incremental_vacuum``), a short
    transaction at a time (``done(bytes so far, bytes free before)`` after each), when more than
    ``RECLAIM_MIN`` bytes are free; the bytes given back. A journal made since 2026-12-05 is
    ``auto_vacuum = INCREMENTAL`` (``connect``); one made before (no auto-vacuum: turning it on takes a
    whole ``VACUUM``) keeps its free pages for its own later rows. What frees pages in bulk is ``chats sync``: the
    vector index's lists rebuilt in a new table and swapped in, the folded tail (at a million
    messages, 680 MB free after the sync that built the journal: 13 % of the file)."""
    if conn.execute("PRAGMA auto_vacuum").fetchall()[0][0] != 2:
        return 0
    size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    free = before = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
    if free * size < RECLAIM_MIN:
        return 0
    from .. import faults   # here: the hook never reclaims

    while free:
        with Immediate(conn):
            conn.execute(f"PRAGMA incremental_vacuum({RECLAIM_STEP})").fetchall()
            faults.point("mid-reclaim")
        left = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
        if left >= free:   # nothing moved (another writer's pages in the way): stop rather than spin
            break
        free = left
        if done:
            done((before - free) * size, before * size)
    return (before - free) * size


def migration_files():
    """The journal's migrations, ordered by their number prefix."""
    return sorted(f for f in os.listdir(MIGRATIONS_DIR) if f.endswith(".sql"))


def connect(path, readonly=False, defer_heavy=False):
    """An apsw connection to the journal at ``path``, created and migrated if needed.

    ``defer_heavy`` (the hook): a heavy migration (``HEAVY``) that the journal is big enough to feel is
    not run: ``MigrationDeferred`` is raised instead, the migrations before it applied.

    A journal (or its WAL or shared-memory file) that is there and is not a regular file is refused
    before SQLite opens it: a FIFO would block the opening for ever, the hook's and every command's."""
    _refuse_special(path)
    new = False
    if not readonly:
        new = _create_private(path)
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(path, flags=flags)
        texts.register(conn)   # before the migrations: their triggers read the text through it
        uuids.register(conn)
        stamps.register(conn)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        # temp_store MEMORY: a statement that fires triggers keeps its statement journal (the pages it changed,
        # for its own rollback) in memory. On a file, past 64 KB (4 of these pages) it spilled into a deleted
        # file in /var/tmp: the message's pages in clear on disk, where no purge reaches, and a file made for
        # every hook turn; marking 100k messages synced spent 11 s in the kernel writing them.
        conn.execute("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA temp_store = MEMORY")
        if new:   # before the first table: then fixed for the file
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}; PRAGMA auto_vacuum = INCREMENTAL")   # (``reclaim``)
        if not readonly:
            conn.execute("PRAGMA secure_delete = ON")   # what a writer frees is zeroed: see erase.scrub_file
            try:
                _migrate_patiently(conn, path, defer_heavy)
            except BaseException:   # deferred, failed, or another process's migration waited for too long
                conn.close()
                raise
    except apsw.Error as exc:
        from ..errors import JournalError  # here: errors is off the hook's path
        raise JournalError(f"cannot open the journal {path}: {exc}") from exc
    return conn


def _migrate_patiently(conn, path=None, defer_heavy=False, wait=BUSY_TIMEOUT_MS / 1000):
    """``migrate``, again after a moment while SQLite answers BUSY without waiting: a journal still new
    (not yet in WAL mode) that another process is writing, which is where hooks racing on the first turn
    of a new machine meet (one of them recorded "database is locked" and stored nothing that turn).
    Each migration is its own transaction that checks ``user_version``: trying again is harmless."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return migrate(conn, path, defer_heavy)
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def _refuse_special(path):
    for name in (path, path + "-wal", path + "-shm"):
        try:
            mode = os.stat(name).st_mode
        except OSError:   # not there (SQLite creates it), or unreadable (SQLite says so)
            continue
        if not stat.S_ISREG(mode):
            from ..errors import JournalError  # here: errors is off the hook's path
            what = "it" if name == path else name
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else "not a regular file"
            raise JournalError(f"cannot open the journal {path}: {what} is {kind}, not a SQLite file; move it away")


def _create_private(path):
    """The journal's file, owner-only, made empty when it is not there; whether it is empty (new)."""
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    if not os.path.exists(path):
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)
        return True
    return os.path.getsize(path) == 0


def user_version(conn):
    return conn.execute("PRAGMA user_version").fetchall()[0][0]


class MigrationDeferred(Exception):
    """A heavy migration is pending and the journal is big enough to feel it: the caller (the hook)
    did not want to wait for it (``connect(defer_heavy=True)``)."""


HEAVY = "-- heavy when:"   # a migration's first line: it writes a table again; what follows, a query of
#   whether the journal is big enough for that to take seconds (the hook then defers it)


def heavy_probe(name):
    """The size query of migration ``name`` when it is heavy (its first line), else None."""
    with open(os.path.join(MIGRATIONS_DIR, name), encoding="utf-8") as fh:
        first = fh.readline().strip()
    return first[len(HEAVY):].strip() if first.startswith(HEAVY) else None


def migrate(conn, path=None, defer_heavy=False):
    """Apply pending migrations, each in one transaction with its record.

    ``PRAGMA user_version`` counts applied migrations, so the common case (all
    applied) costs one pragma read. Concurrent openers serialise on BEGIN
    IMMEDIATE and re-check inside the lock. A heavy migration (``heavy_probe``) on a journal its
    query finds big is deferred when ``defer_heavy``, else applied holding ``heavy_lock``: the
    processes opening meanwhile wait for it there, not on SQLite's busy timeout, which it outlasts.
    """
    files = migration_files()
    if user_version(conn) >= len(files):
        return
    if conn.execute("PRAGMA journal_mode").fetchall()[0][0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    for index, name in enumerate(files):
        if user_version(conn) > index:
            continue
        probe = heavy_probe(name)
        if probe and conn.execute(probe).fetchall()[0][0]:
            if defer_heavy:
                raise MigrationDeferred(name)
            with heavy_lock(path, name):
                drop_leftovers(conn)   # (one an earlier migration left would stand in the way of a swap's name)
                _apply(conn, index, name, heavy=True)
                from .. import faults

                faults.point("before-drop")
                drop_leftovers(conn)
        else:
            _apply(conn, index, name)
            if probe:   # a heavy one on a journal too small to feel it: its leftovers are small too
                drop_leftovers(conn)


LEFTOVERS = ("raw_lines_before", "messages_before", "sessions_before")   # tables a heavy migration leaves, to drop after its commit


def drop_leftovers(conn):
    """Drop what a heavy migration left (``LEFTOVERS``; by this list, never by a name the journal holds),
    each in a transaction of its own; the tables dropped. Not inside the migration's transaction: a table
    dropped there has every page kept in the statement journal (605 MB of memory for the kept lines of a
    million messages); alone, a statement keeps none. ``migrate`` calls it after a heavy migration, and
    ``chats sync`` at every run (a kill between the migration's commit and the drop)."""
    dropped = []
    for name in LEFTOVERS:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchall():
            conn.execute(f"DROP TABLE IF EXISTS {name}")
            dropped.append(name)
    return dropped


def _apply(conn, index, name, heavy=False):
    with open(os.path.join(MIGRATIONS_DIR, name), encoding="utf-8") as fh:
        script = fh.read()
    swaps = any(line.startswith(SWAP) for line in script.splitlines())
    if swaps:   # (a no-op inside a transaction: set before it)
        conn.execute("PRAGMA foreign_keys = OFF")
        if conn.execute("PRAGMA foreign_keys").fetchall()[0][0]:   # still on (a transaction was open): a rename
            raise RuntimeError(f"{name} swaps a table: it runs with the foreign keys off, outside a transaction "
                               "(else the other tables' references follow the old table to its new name)")
    try:
        with Immediate(conn):
            if user_version(conn) > index:
                return
            conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            _run_script(conn, script)
            conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
            conn.execute(f"PRAGMA user_version = {index + 1}")
            if heavy:
                from .. import faults   # here: the hook applies no heavy migration to a journal big enough to feel it

                faults.point("mid-migration")
    finally:
        if swaps:
            conn.execute("PRAGMA foreign_keys = ON")


EACH = "-- each "   # "-- each <n> ids of <table>:": the statement on the next line runs once per n ids of the table
SWAP = "-- swap "   # "-- swap <new> for <table>": a table written again takes the place of the one it replaces


def _run_script(conn, script):
    """Run a migration's SQL in order. A line ``-- each <n> ids of <table>:`` makes the statement on the next
    line (one line, binding ``?1`` and ``?2``) run once for every ``n`` ids of ``table``, ``id > ?1 AND id <= ?2``:
    inside a transaction SQLite keeps every page a statement changes in memory for the statement's own
    rollback (an UPDATE of a million messages held 909 MB; a batch of 50,000, 40-60 MB)."""
    lines, at, start = script.splitlines(keepends=True), 0, 0
    while at < len(lines):
        line = lines[at]
        if not line.startswith((EACH, SWAP)):
            at += 1
            continue
        if "".join(lines[start:at]).strip():
            conn.execute("".join(lines[start:at]))
        if line.startswith(SWAP):
            words = line[len(SWAP):].split()
            if len(words) != 3 or words[1] != "for" or not all(w.isidentifier() for w in words[::2]):
                raise ValueError(f"a migration's swap is written wrong: {line.strip()!r}")
            _swap(conn, words[0], words[2])
            at = start = at + 1
            continue
        words = line[len(EACH):].rstrip().rstrip(":").split()
        if len(words) != 4 or not words[0].isdigit() or words[1:3] != ["ids", "of"] or not words[3].isidentifier() \
                or at + 1 >= len(lines):
            raise ValueError(f"a migration's batched statement is written wrong: {line.strip()!r}")
        step, table = int(words[0]), words[3]
        low, high = conn.execute(f"SELECT coalesce(min(id), 1) - 1, coalesce(max(id), 0) FROM {table}").fetchall()[0]
        for bound in range(low, high, step):
            conn.execute(lines[at + 1], (bound, min(bound + step, high)))
        at = start = at + 2
    if "".join(lines[start:]).strip():
        conn.execute("".join(lines[start:]))


def _swap(conn, new, table):
    """``new`` takes the place of ``table``, which is left as ``<table>_before`` (dropped after the commit:
    ``LEFTOVERS``). The triggers and indexes of ``table`` are made again on ``new`` from their text, and what
    names ``table`` (other tables' foreign keys and triggers, the full-text index's content) names ``new``
    then. Renamed the legacy way, with the foreign keys off (``_apply``): else SQLite rewrites the other
    tables' references to follow the old table to its new name."""
    kept = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') "
                        "AND sql IS NOT NULL ORDER BY type, rowid", (table,)).fetchall()
    for kind, name, _sql in kept:
        quoted = name.replace('"', '""')
        conn.execute(f'DROP {kind.upper()} "{quoted}"')
    conn.execute("PRAGMA legacy_alter_table = ON")
    try:
        conn.execute(f"ALTER TABLE {table} RENAME TO {table}_before")
        conn.execute(f"ALTER TABLE {new} RENAME TO {table}")
    finally:
        conn.execute("PRAGMA legacy_alter_table = OFF")
    for _kind, _name, sql in kept:
        conn.execute(sql)


HEAVY_WAIT = 600   # seconds a process waits for another one's heavy migration before it says so and stops


class heavy_lock:
    """``with heavy_lock(path, name):`` holds ``<journal>.migrating`` (an exclusive ``flock``), waiting for
    another process holding it (``HEAVY_WAIT`` at most, then a ``JournalError``), with a note on stderr
    either way: the one migration a year of history waits for, said once. No lock for a journal without
    a file."""

    def __init__(self, path, name):
        self.path, self.name, self.fd = path, name, None

    def __enter__(self):
        if not self.path or self.path == ":memory:":
            return self
        import fcntl   # here: the hook does not apply a heavy migration to a journal big enough to feel it

        try:
            self.fd = os.open(self.path + ".migrating", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:   # a link or a folder planted there: said, not followed
            from ..errors import JournalError  # here: errors is off the hook's path

            raise JournalError(f"cannot open the journal's migration lock {self.path}.migrating: {exc}") from exc
        if self._take(fcntl):
            _note(f"migrating the journal ({self.name}), once: up to a minute for a year of history")
            return self
        _note(f"waiting for another process migrating the journal ({self.name})")
        deadline = time.monotonic() + HEAVY_WAIT
        while not self._take(fcntl):
            if time.monotonic() >= deadline:
                os.close(self.fd)
                self.fd = None
                from ..errors import JournalError  # here: errors is off the hook's path

                raise JournalError(f"another process has been migrating the journal {self.path} for "
                                   f"{HEAVY_WAIT // 60} minutes ({self.name}): is it stuck?")
            time.sleep(0.05)
        return self

    def _take(self, fcntl):
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def __exit__(self, *exc):
        if self.fd is not None:
            os.close(self.fd)   # (closing releases the lock)
        return False


def _note(text):
    try:
        os.write(2, f"claude-chats: {text}\n".encode())
    except OSError:
        pass


def number_of(session_id):
    """SQL for the number a conversation's messages and kept lines name it by (``session_numbers``, journal
    migrations 0012 and 0015), from the SQL of its id: ``WHERE m.session = {number_of("s.id")}``. NULL (no
    row matches) for a conversation the journal does not hold."""
    return f"(SELECT number FROM session_numbers WHERE session_id = {session_id})"


NUMBER = number_of("?")   # ... of the id bound in its place
# From a message ``m`` to its session's row ``s``, through its number ``n`` (``sessions`` is clustered on its id)
SESSION_OF = "JOIN session_numbers n ON n.number = m.session JOIN sessions s ON s.id = n.session_id"

# The narrow index of the columns a search filters and places a message by (migration 0017; a migration that
# writes ``messages`` again keeps it: ``_swap`` makes a table's indexes again on the new one)
FILTERS_INDEX = "messages_filters"
FILTERS_COLUMNS = frozenset(("id", "session", "seq", "kind", "copy"))


def has_filters_index(conn):
    """Whether the journal has ``FILTERS_INDEX`` (a journal could lose it only by hand: searches then read
    the table, the same rows, slower)."""
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ? AND tbl_name = 'messages'",
                             (FILTERS_INDEX,)).fetchall())


def session_name(alias="s"):
    """SQL for a session's name: its /rename title, else agent name, AI title, summary, slug."""
    prefix = f"{alias}." if alias else ""
    return f"coalesce({', '.join(prefix + c for c in ('name', 'agent_name', 'ai_title', 'summary', 'slug'))})"


def get_state(conn, key):
    """A value of the ``state`` table (small facts for ``chats status``), or None."""
    rows = conn.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchall()
    return rows[0][0] if rows else None


def set_state(conn, key, value):
    # an upsert, not INSERT OR REPLACE: the row keeps its rowid, so the key's index is not written again
    # (one 16 KB page less in the WAL of every hook turn, which writes ``last_hook``)
    conn.execute("INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 (key, value))


def has_pending(conn):
    """Whether any message waits for sync, from the journal's counters (migration 0006): read by the hook
    after it stores messages, it reads no message (``messages_pending``, the index that made
    ``WHERE synced = 0`` cheap, is kept only while a Postgres is configured: ``outbox.keep_pending_indexes``)."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM message_counts WHERE synced = 0 AND messages > 0)"
                             ).fetchall()[0][0])


class Snapshot:
    """``with Snapshot(conn):`` reads in one (deferred) transaction: every statement of the block sees one
    state of the journal, its schema included (a seal of the full-text index renames a table; a fold
    rewrites the vector index's lists). Inside a caller's transaction it adds nothing and ends nothing."""

    __slots__ = ("conn", "own")

    def __init__(self, conn):
        self.conn, self.own = conn, False

    def __enter__(self):
        self.own = not self.conn.in_transaction
        if self.own:
            self.conn.execute("BEGIN")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if self.own:
            self.conn.execute("COMMIT")   # a read: nothing to keep or undo
        return False


class Twin:
    """``with Twin(first, second) as same:`` a read transaction on each of two connections to one journal;
    ``same`` says whether both read one state of it, so that what one reads may be completed by what the
    other does (``ivfscan``: a search's vector lists read on two threads).

    ``second``'s transaction begins between two readings of ``first``'s ``data_version``, the second inside
    ``first``'s own transaction: equal, no other connection committed from before ``second`` began until
    ``first`` did, and both read the state of that moment. Unequal (a commit came between), or either
    connection inside a caller's transaction already: ``same`` is False and each reads its own state, as
    with two ``Snapshot``s. Both transactions end when the block does."""

    __slots__ = ("first", "second", "own")

    def __init__(self, first, second):
        self.first, self.second, self.own = first, second, []

    def __enter__(self):
        fresh = not self.first.in_transaction and not self.second.in_transaction
        try:
            before = _data_version(self.first) if fresh else None
            for conn in (self.second, self.first):
                if not conn.in_transaction:
                    conn.execute("BEGIN")
                    self.own.append(conn)
            if not fresh:
                return False
            _data_version(self.second)   # its read transaction begins here, not at its first statement
            return _data_version(self.first) == before
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        own, self.own = self.own, []
        try:
            if own:
                own[0].execute("COMMIT")   # reads: nothing to keep or undo
        finally:
            for conn in own[1:]:
                conn.execute("COMMIT")
        return False


def _data_version(conn):
    return conn.execute("PRAGMA data_version").fetchall()[0][0]


class Immediate:
    """``with Immediate(conn):`` runs the block in a BEGIN IMMEDIATE transaction.

    IMMEDIATE takes the write lock up front, so read-then-write sequences (the
    transcript cursor, the next sequence number) are serialised between
    processes; the busy timeout makes the others wait rather than fail.
    """

    __slots__ = ("conn",)

    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
                return False
            except apsw.Error:
                self._rollback()
                raise
        self._rollback()
        return False

    def _rollback(self):
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")


def find_space(conn, key):
    """Id of the space with ``key``, or None."""
    row = conn.execute("SELECT id FROM spaces WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None
