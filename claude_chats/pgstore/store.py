"""The canonical Postgres store: push batches idempotently, count, describe spaces.

A push is two transactions, each a binary COPY into temporary tables then
``INSERT ... SELECT ... ON CONFLICT`` into the real ones: first the batch's
conversations, then its messages and vectors. Message uuid and session id are
the identities, so pushing the same batch twice (a crash before the journal
marked it synced, or two machines sharing a home directory) inserts nothing
the second time. The conversations commit on their own so that batches
pushed at once on several connections do not queue behind each other: a
session spanning two batches would otherwise hold the second batch's upsert
on the first one's uncommitted row until that whole batch committed. A
conversation committed without its messages (a crash in between) is
harmless: the journal still has them pending and the next push brings them.
"""

import contextlib
import json
import math

import psycopg

from .. import faults, rawlines
from ..errors import PostgresError, PostgresUnavailable
from ..records import PushResult
from ..search.core import word_count
from . import connect as pg
from . import migrations
from . import url as dburl

HNSW_MAX_DIMS = 2000      # pgvector's index limit for vector; halfvec indexes go to 4000
HALFVEC_MAX_DIMS = 4000
TEXT_INDEX = "messages_content_tsv"     # sql/0001_init.sql: the full-text (GIN) index
DROP_LOCK_TIMEOUT = "2s"  # dropping an index for a bulk load waits this long for readers, else loads live
# maintenance_work_mem of a session (re)building an index: at least BUILD_MEMORY_MIN_MB, and for an HNSW
# index what its graph needs to stay in memory (``hnsw_build_mb``), at most BUILD_MEMORY_MAX_MB; a server
# configured with more keeps its own. pgvector builds a graph that outgrows it on disk, an order of
# magnitude slower (1M vectors of 384 dimensions: 19 minutes at 256 MB, the graph needing ~2 GB).
BUILD_MEMORY_MIN_MB = 256
BUILD_MEMORY_MAX_MB = 4096
GIN_BUILD_BYTES = 1024    # per message: the full-text build's (lexeme, row) lists gathered in memory before a merge
HNSW_NODE_BYTES = 512     # per vector beside its values: pgvector's element and its neighbour lists (m = 16)
# The vector index of a space created now (an existing space keeps the kind it was made with:
# spaces.index_kind). ivfflat, by measurement at 1M real-shaped vectors of 384 dimensions (DESIGN.md,
# "A new space's vector index is ivfflat"): built in 43-47 s against HNSW's 167 s, recall@10 of the
# vector leg against exact 0.993-1.000 (HNSW at ef_search 400 / 1000: 0.870 / 0.910).
DEFAULT_INDEX_KIND = "ivfflat"

_TEMP_TABLES = """
CREATE TEMP TABLE push_conversations (
    session_id text, project_path text, git_branch text, name text, started_at text, last_at text,
    parent_session_id text, agent_id text, machine text, updated_at text, entrypoint text, machine_made boolean
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE push_messages (
    message_uuid text, session_id text, seq integer, role text, kind text, content text, created_at text,
    is_copy boolean,
    content_words integer
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE push_raw_lines (
    session_id text, line_key text, seq integer, parent text, line bytea, created_at text
) ON COMMIT DELETE ROWS;
CREATE TEMP TABLE push_chunks (
    message_uuid text, chunk_index integer, start_char integer, end_char integer, embedding vector
) ON COMMIT DELETE ROWS;
"""

_CONVERSATION_TYPES = ["text"] * 11 + ["bool"]
_MESSAGE_TYPES = ["text", "text", "int4", "text", "text", "text", "text", "bool", "int4"]
_CHUNK_TYPES = ["text", "int4", "int4", "int4", "vector"]
_RAW_LINE_TYPES = ["text", "text", "int4", "text", "bytea", "text"]

# Newest journal version (by updated_at; the later push on a tie) wins for the
# descriptive columns; the time span only grows; the machine that pushed first
# keeps the row. Rows that would not change are filtered out before the
# upsert, so a re-push writes (and locks) nothing: concurrent pushes of
# batches of one session do not wait for each other.
def _changed(old, new):
    """SQL: the pushed row ``new`` would change the stored row ``old``."""
    return f"""({old}.updated_at IS NULL OR {new}.updated_at > {old}.updated_at
   OR ({new}.updated_at = {old}.updated_at
       AND ({new}.name, {new}.git_branch, {new}.project_path)
           IS DISTINCT FROM ({old}.name, {old}.git_branch, {old}.project_path))
   OR ({new}.machine_made AND NOT {old}.machine_made)
   OR {new}.last_at > {old}.last_at OR {new}.started_at < {old}.started_at
   OR ({old}.last_at IS NULL AND {new}.last_at IS NOT NULL)
   OR ({old}.started_at IS NULL AND {new}.started_at IS NOT NULL))"""


_NEWER = "(conversations.updated_at IS NULL OR excluded.updated_at >= conversations.updated_at)"

_UPSERT_CONVERSATIONS = f"""
INSERT INTO conversations (session_id, project_path, git_branch, name, started_at, last_at,
                           parent_session_id, agent_id, machine, updated_at, entrypoint, machine_made)
SELECT * FROM (
    SELECT DISTINCT ON (session_id) session_id, project_path, git_branch, name, started_at::timestamptz,
           last_at::timestamptz, parent_session_id, agent_id, machine, updated_at::timestamptz, entrypoint,
           coalesce(machine_made, false) AS machine_made
    FROM push_conversations ORDER BY session_id, updated_at DESC NULLS LAST
) t
WHERE NOT EXISTS (SELECT 1 FROM conversations c WHERE c.session_id = t.session_id AND NOT {_changed("c", "t")})
ORDER BY session_id
ON CONFLICT (session_id) DO UPDATE SET
    project_path = CASE WHEN {_NEWER} THEN excluded.project_path ELSE conversations.project_path END,
    git_branch = CASE WHEN {_NEWER} THEN excluded.git_branch ELSE conversations.git_branch END,
    name = CASE WHEN {_NEWER} THEN excluded.name ELSE conversations.name END,
    parent_session_id = coalesce(conversations.parent_session_id, excluded.parent_session_id),
    agent_id = coalesce(conversations.agent_id, excluded.agent_id),
    started_at = least(conversations.started_at, excluded.started_at),
    last_at = greatest(conversations.last_at, excluded.last_at),
    updated_at = greatest(conversations.updated_at, excluded.updated_at),
    entrypoint = coalesce(conversations.entrypoint, excluded.entrypoint),
    machine_made = conversations.machine_made OR excluded.machine_made
WHERE {_changed("conversations", "excluded")}
"""

_INSERT_MESSAGES = """
INSERT INTO messages (conversation_id, message_uuid, role, kind, content, created_at, sequence_num, is_copy,
                      content_words)
SELECT c.id, t.message_uuid, t.role, t.kind, t.content, t.created_at::timestamptz, t.seq, t.is_copy, t.content_words
FROM push_messages t JOIN conversations c ON c.session_id = t.session_id
ON CONFLICT DO NOTHING
"""

# Two journals that numbered one session differently (rare: different
# import histories) collide on (conversation_id, sequence_num) with different
# uuids; those messages go after the conversation's last one instead of
# being lost.
_INSERT_RENUMBERED = """
INSERT INTO messages (conversation_id, message_uuid, role, kind, content, created_at, sequence_num, is_copy,
                      content_words)
SELECT c.id, t.message_uuid, t.role, t.kind, t.content, t.created_at::timestamptz,
       top.seq + row_number() OVER (PARTITION BY c.id ORDER BY t.seq), t.is_copy, t.content_words
FROM push_messages t JOIN conversations c ON c.session_id = t.session_id
CROSS JOIN LATERAL (SELECT coalesce(max(sequence_num), -1) AS seq FROM messages m
                    WHERE m.conversation_id = c.id) top
WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.message_uuid = t.message_uuid)
ON CONFLICT DO NOTHING
"""

# The batch's rows find their messages one index probe each (LATERAL ... LIMIT 1 is
# never turned into a join): with no statistics on the temporary tables the planner
# would hash the whole messages table for every batch, a cost growing with the table.
_MISSING = """
SELECT t.message_uuid FROM push_messages t
LEFT JOIN LATERAL (SELECT true AS found FROM messages m WHERE m.message_uuid = t.message_uuid LIMIT 1) m ON true
WHERE m.found IS NULL
"""

# Lines of conversations not in Postgres yet are left out (and reported, so they stay pending).
_INSERT_RAW_LINES = """
INSERT INTO raw_lines (conversation_id, line_key, seq, parent, line, created_at)
SELECT c.id, t.line_key, t.seq, t.parent, t.line, t.created_at::timestamptz
FROM push_raw_lines t JOIN conversations c ON c.session_id = t.session_id
ON CONFLICT DO NOTHING
"""
_RAW_LINES_HOMELESS = """
SELECT DISTINCT t.session_id FROM push_raw_lines t
WHERE NOT EXISTS (SELECT 1 FROM conversations c WHERE c.session_id = t.session_id)
"""

_INSERT_CHUNKS = """
INSERT INTO {table} (message_id, chunk_index, start_char, end_char, embedding)
SELECT m.id, t.chunk_index, t.start_char, t.end_char, t.embedding
FROM push_chunks t CROSS JOIN LATERAL (SELECT id FROM messages m WHERE m.message_uuid = t.message_uuid LIMIT 1) m
ON CONFLICT (message_id, chunk_index) DO NOTHING
"""


_FOLD_TALLIES = """
WITH gone AS (DELETE FROM message_tally RETURNING kind, is_copy, delta)
INSERT INTO message_tally SELECT kind, is_copy, sum(delta) FROM gone GROUP BY kind, is_copy;
WITH gone AS (DELETE FROM vector_tally RETURNING space_id, delta)
INSERT INTO vector_tally SELECT space_id, sum(delta) FROM gone GROUP BY space_id;
"""


def _blocker(conn):
    try:
        return migrations.blocker(conn)
    except psycopg.Error:  # the connection is gone too: the error alone says enough
        return None


def message_rows(messages):
    """``records.Message``s as ``push_messages`` rows: each with its length in words, for bm25 (the
    journal's count when it came with the message, else counted here)."""
    return [(*m[:-1], m.words if m.words is not None else word_count(m.content)) for m in messages]


def vector_table(space_id):
    return f"vectors_{int(space_id)}"


def index_expression(dimensions, kind="hnsw"):
    """The indexed expression and operator class of a ``kind`` index for a space of ``dimensions``.

    An ivfflat index, and any index above pgvector's 2,000-dimension limit, is on a halfvec cast:
    an ivfflat index holds its vectors, and at half their size the 1M index (785 against 1,567 MB)
    fits in shared buffers (the vector leg 14.5 against 19-25 ms; its candidates are re-ranked by
    the exact distance). Readers order by the expression of the index the space has
    (``PgSearch``: its definition), not by this function's answer for its kind.
    """
    if dimensions <= HNSW_MAX_DIMS and kind != "ivfflat":
        return "embedding", "vector_cosine_ops"
    return f"(embedding::halfvec({int(dimensions)}))", "halfvec_cosine_ops"


def hnsw_build_mb(rows, dimensions):
    """MB of maintenance_work_mem an HNSW build of ``rows`` vectors keeps its whole graph in: pgvector
    said "graph no longer fits" after 137k vectors of 384 dimensions at 256 MB (1.96 KB each); a
    quarter more for the rows added while it builds and for the estimate's error."""
    value_bytes = 4 * dimensions if dimensions <= HNSW_MAX_DIMS else 2 * dimensions   # halfvec above
    return math.ceil(1.25 * max(0, rows) * (value_bytes + HNSW_NODE_BYTES) / (1024 * 1024))


def ivfflat_lists(rows):
    """pgvector's advice: rows / 1000 up to a million rows, sqrt(rows) above."""
    return max(1, rows // 1000) if rows <= 1_000_000 else int(math.sqrt(rows))


def ivfflat_build_mb(lists, dimensions):
    """MB of maintenance_work_mem an ivfflat build of ``lists`` needs, else pgvector refuses to start
    ("memory required is 273 MB" for 1,000 lists of 384 dimensions, 15 MB for up to 200): its k-means
    trains on 50 sampled vectors a list (at least 10,000, whatever the rows) and keeps a lower bound per
    sample and list (Elkan's), plus the centres' distances; a tenth more for the rest."""
    lists = max(1, lists)
    value_bytes = 4 * dimensions if dimensions <= HNSW_MAX_DIMS else 2 * dimensions
    samples = max(50 * lists, 10_000)
    return math.ceil(1.1 * (samples * (value_bytes + 16 + 4 * lists) + 4 * lists * lists) / (1024 * 1024))


def ivfflat_probes(lists):
    """Lists an ivfflat search probes (``ivfflat.probes``): about the square root of ``lists`` (pgvector's
    advice). At 1M real-shaped vectors (1,000 lists, 32 probed) recall@10 of the vector leg against
    exact was 0.997 on float vectors, 0.993 on halfvec (0.983-0.990 filtered by project or date);
    16 probes gave 0.96 (bench_pg_scale.py, BENCHMARKS.md). pgvector's default, 1, found a fraction."""
    lists = max(1, int(lists or 1))
    return min(lists, math.ceil(math.sqrt(lists)))


class PgStore:
    """The canonical store on one psycopg connection (``PgStore.open(url)``)."""

    def __init__(self, conn, url="", allow_insecure_remote=False):
        self.conn, self.url, self.allow_insecure_remote = conn, url, allow_insecure_remote
        self._spaces = {}
        self._temp_ready = False

    @classmethod
    def open(cls, url, allow_insecure_remote=False, connect_timeout=pg.CONNECT_TIMEOUT, migrate=True):
        """Connect, apply pending migrations, register pgvector's types."""
        conn = pg.connect(url, allow_insecure_remote, connect_timeout, register=False)
        try:
            if migrate:
                migrations.migrate(conn)
            pg.register_vector_type(conn, url)
        except psycopg.OperationalError as exc:  # the connection was lost while it was being set up
            conn.close()
            raise PostgresUnavailable(f"lost the connection to {dburl.mask(url)} while opening it: "
                                      f"{dburl.hide_password(' '.join(str(exc).split()), url)}") from None
        except psycopg.Error as exc:  # DuplicateTable (another tool's table), InsufficientPrivilege (no CREATE)
            why = _blocker(conn)
            conn.close()
            first = dburl.hide_password(" ".join(str(exc).splitlines()[0].split()), url)
            raise PostgresError(f"cannot create claude-chats' tables in {dburl.mask(url)}: {first}"
                                + (f"; {why}" if why else "")) from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, url, allow_insecure_remote)

    def clone(self):
        """Another store on a new connection to the same database (schema already migrated)."""
        return type(self).open(self.url, self.allow_insecure_remote, migrate=False)

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- spaces ---------------------------------------------------------------

    def ensure_space(self, space, canary=None, index_kind=DEFAULT_INDEX_KIND):
        """The id of ``space`` (a ``models.Space``), registering it and its vector table;
        ``canary`` (its canary vector) is stored when the space has none yet."""
        if space.key in self._spaces:
            return self._spaces[space.key]
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (migrations.LOCK_KEY, space.key))
            row = self.conn.execute("SELECT id FROM spaces WHERE key = %s", (space.key,)).fetchone()
            space_id = row[0] if row else self._insert_space(space, canary, index_kind)
            if canary is not None:
                self.conn.execute("UPDATE spaces SET canary = %s WHERE id = %s AND canary IS NULL",
                                  (canary, space_id))
        self._spaces[space.key] = space_id
        return space_id

    def _insert_space(self, space, canary, index_kind):
        space_id = self.conn.execute(
            "INSERT INTO spaces (key, provider, model, dimensions, options, canary, index_kind) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
            (space.key, space.provider, space.model, space.dimensions, json.dumps(space.options or {}),
             canary, index_kind)).fetchone()[0]
        table = vector_table(space_id)
        self.conn.execute(
            f"CREATE TABLE {table} (message_id uuid NOT NULL REFERENCES messages (id) ON DELETE CASCADE, "
            "chunk_index integer NOT NULL, start_char integer NOT NULL, end_char integer NOT NULL, "
            f"embedding vector({int(space.dimensions)}) NOT NULL, PRIMARY KEY (message_id, chunk_index))")
        self.conn.execute("SELECT chats_tally_space(%s)", (space_id,))   # sql/0007_tallies.sql
        if index_kind == "hnsw":
            self._create_index(space_id, "hnsw", space.dimensions)
        return space_id

    def _create_index(self, space_id, kind, dimensions, lists=None):
        if dimensions > HALFVEC_MAX_DIMS:
            return  # beyond pgvector's index limits: exact search
        table = vector_table(space_id)
        expr, ops = index_expression(dimensions, kind)
        options = f" WITH (lists = {int(lists)})" if kind == "ivfflat" else ""
        self.conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_embedding ON {table} "
                          f"USING {kind} ({expr} {ops}){options}")

    def _space_row(self, space_id):
        return self.conn.execute("SELECT index_kind, index_lists, dimensions FROM spaces WHERE id = %s",
                                 (space_id,)).fetchone()

    def has_index(self, space_id):
        return self.conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                                 (f"{vector_table(space_id)}_embedding",)).fetchone()[0]

    def owns_vectors(self, space_id):
        """Whether this role may drop and rebuild the space's index (it owns the table)."""
        return self._owns(vector_table(space_id))

    def owns_messages(self):
        """Whether this role may drop and rebuild the full-text index (it owns ``messages``)."""
        return self._owns("messages")

    def _owns(self, table):
        row = self.conn.execute(
            "SELECT pg_has_role(current_user, tableowner, 'USAGE') FROM pg_tables "
            "WHERE schemaname = current_schema() AND tablename = %s", (table,)).fetchone()
        return bool(row and row[0])

    def drop_index(self, space_id):
        """Drop the space's vector index before a bulk load (``ensure_index`` rebuilds it).

        False when readers held the table longer than DROP_LOCK_TIMEOUT (the load goes live)."""
        return self._drop_for_load(f"{vector_table(space_id)}_embedding")

    def ensure_index(self, space_id):
        """(Re)build the space's vector index if it is missing (after a bulk load or a crash)."""
        if self.has_index(space_id):
            return False
        kind, _lists, dims = self._space_row(space_id)
        if kind == "ivfflat":
            return self.refresh_index(space_id, force=True) is not None
        rows = self.vector_count(space_id)
        with self._maintenance_memory(hnsw_build_mb(rows, dims)):
            try:
                self._create_index(space_id, kind, dims)
            except (psycopg.errors.DiskFull, psycopg.errors.OutOfMemory):
                # a parallel build keeps its graph in shared memory, which a container may cap
                # (Docker: 64 MB of /dev/shm): build it in this backend alone
                self.conn.execute("SET max_parallel_maintenance_workers = 0")
                try:
                    self._create_index(space_id, kind, dims)
                finally:
                    self.conn.execute("RESET max_parallel_maintenance_workers")
        return True

    def has_text_index(self):
        return self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (TEXT_INDEX,)).fetchone()[0]

    def drop_text_index(self):
        """Drop the full-text index before a bulk load: building it afresh costs about half of
        what keeping it up to date row by row does. ``ensure_text_index`` rebuilds it; searches
        meanwhile scan ``content_tsv``. False when readers held the table (see ``drop_index``)."""
        return self._drop_for_load(TEXT_INDEX)

    def ensure_text_index(self):
        """(Re)build the full-text index if it is missing (after a bulk load or a crash), then
        ANALYZE ``messages``. The definition is sql/0001_init.sql's."""
        if self.has_text_index():
            return False
        rows = self.conn.execute("SELECT count(*) FROM messages").fetchone()[0]
        with self._maintenance_memory(rows * GIN_BUILD_BYTES / (1024 * 1024)):
            self.conn.execute(f"CREATE INDEX IF NOT EXISTS {TEXT_INDEX} ON messages USING gin (content_tsv)")
        self.conn.execute("ANALYZE messages")
        return True

    def message_count(self):
        """Messages stored: the planner's estimate when there is one (a bulk-load decision), else counted."""
        estimate = self.conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'messages'::regclass").fetchone()[0]
        if estimate is not None and estimate >= 0:
            return int(estimate)
        return self.conn.execute("SELECT count(*) FROM messages").fetchone()[0]

    def _drop_for_load(self, index):
        try:
            with self.conn.transaction():
                self.conn.execute(f"SET LOCAL lock_timeout = '{DROP_LOCK_TIMEOUT}'")
                self.conn.execute(f"DROP INDEX IF EXISTS {index}")
        except psycopg.errors.LockNotAvailable:
            return False
        return True

    @contextlib.contextmanager
    def _maintenance_memory(self, wanted_mb=BUILD_MEMORY_MIN_MB):
        """maintenance_work_mem for an index build: ``wanted_mb`` within the BUILD_MEMORY bounds, or the
        server's own setting when that is larger."""
        current = self.conn.execute(
            "SELECT setting::bigint * 1024 / (1024 * 1024) FROM pg_settings WHERE name = 'maintenance_work_mem'"
        ).fetchone()[0]   # the setting is in kB
        wanted = int(min(BUILD_MEMORY_MAX_MB, max(BUILD_MEMORY_MIN_MB, wanted_mb)))
        if wanted <= current:
            yield current
            return
        self.conn.execute(f"SET maintenance_work_mem = '{wanted}MB'")
        try:
            yield wanted
        finally:
            self.conn.execute("RESET maintenance_work_mem")

    def vector_count(self, space_id):
        return self.conn.execute(f"SELECT count(*) FROM {vector_table(space_id)}").fetchone()[0]

    def describe_error(self, exc):
        """One line about a psycopg error, with the URL's password scrubbed."""
        text = " ".join(str(exc).split()) or type(exc).__name__
        return dburl.hide_password(text, self.url)

    def space_canary(self, space_id):
        """The stored canary vector of a space (numpy float32), or None."""
        row = self.conn.execute("SELECT canary FROM spaces WHERE id = %s", (space_id,)).fetchone()
        return row[0].to_numpy() if row and row[0] is not None else None

    def spaces(self):
        """Every registered space as dicts (key, provider, model, dimensions, options, canary, vectors)."""
        rows = self.conn.execute(
            "SELECT id, key, provider, model, dimensions, options, canary, index_kind FROM spaces ORDER BY id"
        ).fetchall()
        names = ("id", "key", "provider", "model", "dimensions", "options", "canary", "index_kind")
        return [dict(zip(names, row)) for row in rows]

    # -- pushing --------------------------------------------------------------

    def push(self, batch):
        """Write ``batch`` (a ``records.Batch``): its conversations, then its messages and vectors
        in one transaction (see the module docstring); returns a ``PushResult``."""
        space_id = self.ensure_space(batch.space) if batch.space is not None and batch.chunks else None
        self._ensure_temp_tables()
        cur = self.conn.cursor()
        conversations = 0
        if batch.conversations:
            with self.conn.transaction():
                self._copy(cur, "push_conversations", _CONVERSATION_TYPES, batch.conversations)
                conversations = cur.execute(_UPSERT_CONVERSATIONS).rowcount
            faults.point("after-conversations")
        if not batch.messages and not batch.chunks:
            return PushResult(conversations, 0, 0, [])
        with self.conn.transaction():
            # No JIT (where the server has it): with no statistics on the temporary tables
            # the planner guesses thousands of rows and would compile every batch's statements.
            cur.execute("SET LOCAL jit = off")
            self._copy(cur, "push_messages", _MESSAGE_TYPES, message_rows(batch.messages))
            messages = cur.execute(_INSERT_MESSAGES).rowcount
            if messages < len(batch.messages):
                messages += cur.execute(_INSERT_RENUMBERED).rowcount
            chunks = 0
            if space_id is not None:
                self._copy(cur, "push_chunks", _CHUNK_TYPES, batch.chunks)
                chunks = cur.execute(_INSERT_CHUNKS.format(table=vector_table(space_id))).rowcount
            missing = [row[0] for row in cur.execute(_MISSING)]
        return PushResult(conversations, messages, chunks, missing)

    def push_raw_lines(self, lines):
        """Write ``records.RawLine``s in one transaction (idempotent: a line stored already is left as
        it is); returns the session ids whose conversation is not in Postgres (their lines were not
        written and stay pending)."""
        if not lines:
            return []
        self._ensure_temp_tables()
        cur = self.conn.cursor()
        with self.conn.transaction():
            self._copy(cur, "push_raw_lines", _RAW_LINE_TYPES, lines)
            cur.execute(_INSERT_RAW_LINES)
            return [row[0] for row in cur.execute(_RAW_LINES_HOMELESS)]

    def kept_lines(self, session_id):
        """``(project_path, {conversation id: [(key, parent, line bytes or None)]})`` of ``session_id``
        and its subagents (``rawlines``), each in order; ``(None, {})`` when Postgres has none."""
        rows = self.conn.execute(
            "SELECT c.session_id, c.project_path, r.line_key, r.parent, r.line FROM conversations c "
            "JOIN raw_lines r ON r.conversation_id = c.id WHERE c.session_id = %s OR c.parent_session_id = %s "
            "ORDER BY c.session_id, r.seq", (session_id, session_id)).fetchall()
        project = next((path for conversation, path, *_ in rows if conversation == session_id), None)
        return project, rawlines.unpack_rows((conversation, key, parent, line)
                                             for conversation, _path, key, parent, line in rows)

    def _copy(self, cur, table, types, rows):
        if not rows:
            return
        with cur.copy(f"COPY {table} FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(types)
            for index, row in enumerate(rows):
                copy.write_row(row)
                if index == len(rows) // 2:
                    faults.point(f"mid-copy-{table}")

    def _ensure_temp_tables(self):
        if not self._temp_ready:
            self.conn.execute(_TEMP_TABLES)
            self._temp_ready = True

    # -- maintenance and counts -----------------------------------------------

    def refresh_index(self, space_id, force=False):
        """After a bulk load: ANALYZE; an ivfflat space gets its index (re)built
        when the row count outgrew its ``lists``. Returns the lists used, or None."""
        table = vector_table(space_id)
        self.conn.execute(f"ANALYZE {table}")
        kind, lists, dims = self._space_row(space_id)
        if kind != "ivfflat" or dims > HALFVEC_MAX_DIMS:
            return None
        wanted = ivfflat_lists(self.vector_count(space_id))
        while wanted > 1 and ivfflat_build_mb(wanted, dims) > BUILD_MEMORY_MAX_MB:
            wanted = int(wanted * 0.9)   # beyond ~4,000 lists (16M vectors) their k-means outgrows the cap
        if not force and lists is not None and wanted < 2 * lists and self.has_index(space_id):
            return lists
        # the memory setting outside the transaction: it is reset after a failed build rolled back
        with self._maintenance_memory(ivfflat_build_mb(wanted, dims)), self.conn.transaction():
            self.conn.execute(f"DROP INDEX IF EXISTS {table}_embedding")
            self._create_index(space_id, "ivfflat", dims, wanted)
            self.conn.execute("UPDATE spaces SET index_lists = %s WHERE id = %s", (wanted, space_id))
        return wanted

    def fold_tallies(self):
        """Fold the rows the tally triggers appended (sql/0007_tallies.sql) into one per group, so
        that a search sums a few rows. Rows appended meanwhile by other connections stay as they are."""
        try:
            with self.conn.transaction():
                self.conn.execute(_FOLD_TALLIES)
        except psycopg.errors.InsufficientPrivilege:
            pass   # a role granted its rights before sql/0007: the rows stay as they are, summed all the same

    def counts(self):
        """Rows per table: conversations, messages and vectors per space key."""
        one = lambda sql: self.conn.execute(sql).fetchone()[0]  # noqa: E731
        vectors = {s["key"]: one(f"SELECT count(*) FROM {vector_table(s['id'])}") for s in self.spaces()}
        return {"conversations": one("SELECT count(*) FROM conversations"),
                "messages": one("SELECT count(*) FROM messages"), "vectors": vectors}
