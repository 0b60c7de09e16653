"""Journals for the tests, and the search corpus: a small set of conversations, synced for real.

``build_journal(folder)`` imports the corpus (``CONVERSATIONS`` and a subagent)
into a journal through the real import path; ``sync_corpus(journal, provider,
url)`` runs the real ``chats sync`` engine, which keeps the vectors in the
journal (sqlite-vec, ``localvec``) and pushes messages and vectors to Postgres
when ``url`` is given. Both stores then hold the same messages and the same
vectors.

The fixtures, one meaning each:

- ``empty_journal``: a ``Journal`` at the isolated default path, empty.
- ``journal_conn``: a raw apsw connection (``localstore.db.connect``) to that
  journal, empty, for the tests of what sits below ``Journal``.
- ``corpus_journal``: the search corpus imported into ``tmp_path/journal.db``.
- ``synced_journal``: ``corpus_journal`` synced with ``HashEmbedder``, the
  vectors kept in the journal (no Postgres).
- ``pg_synced_journal``: ``corpus_journal`` synced with ``HashEmbedder`` into
  the fresh database of ``pg_db_url`` (vectors kept in the journal too).
- ``hash_embedder``: a ``HashEmbedder``.
"""

import uuid

import pytest

from claude_chats import config, paths
from claude_chats.localstore import db, keptlines, outbox, uuids, writer
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.searcher import Searcher
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.fakes import HashEmbedder

# session id -> (project folder, [alternating user / assistant texts])
CONVERSATIONS = {
    "s-migrate": ("/work/alpha", [
        "the migration test is flaky: it fails every other run on CI",
        "The flaky migration test fails because the id sequence is not reset between runs; resetting the "
        "sequence in the fixture fixes it.",
        "great, please also check the rollback migration",
        "The rollback migration drops the index before the column, which is the right order.",
    ]),
    "s-docker": ("/work/alpha/services", [
        "docker compose up fails with port 5432 already in use",
        "Another Postgres container holds port 5432; stop it or map the service to 5433 in docker-compose.yml.",
    ]),
    "s-react": ("/work/beta", [
        "my useEffect runs in an infinite loop and the page freezes",
        "The effect depends on an object created on every render; memoize it with useMemo.",
    ]),
    "s-rust": ("/work/beta", [
        "the borrow checker complains that the value does not live long enough",
        "Return an owned String instead of a reference to the local buffer; its lifetime ends with the function.",
    ]),
    "s-k8s": ("/work/gamma", [
        "the pod is in CrashLoopBackOff and the events say OOMKilled",
        "The container exceeds its 256Mi memory limit; raise the limit or fix the leak in the cache.",
    ]),
    "s-async": ("/work/gamma", [
        "asyncio raises RuntimeError: Event loop is closed at exit",
        "Close the client inside the running loop before asyncio.run returns.",
    ]),
    "s-long": ("/work/alpha", [f"note {i} about the schema migration of table t{i}" for i in range(30)]),
}
SUBAGENT = ("s-migrate", "a1", "subagent report: searched the repository for sequence reset helpers in the "
                                "migration fixtures")


def corpus_lines():
    out = []
    for day, (session, (project, texts)) in enumerate(CONVERSATIONS.items(), 1):
        for i, text in enumerate(texts):
            ts = f"2026-01-{day:02d}T10:{i // 60:02d}:{i % 60:02d}.000Z"
            make = lines.user if i % 2 == 0 else lines.assistant
            out.append((session, make(text, session=session, ts=ts, cwd=project)))
    return out


def write_corpus(folder):
    folder.mkdir(parents=True, exist_ok=True)
    by_session = {}
    for session, line in corpus_lines():
        by_session.setdefault(session, []).append(line)
    files = []
    for session, objs in by_session.items():
        path = folder / f"{session}.jsonl"
        path.write_bytes(lines.encode(*objs))
        files.append(str(path))
    parent, agent, text = SUBAGENT
    sub = folder / parent / "subagents" / f"agent-{agent}.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_bytes(lines.encode(lines.user(text, session=parent, cwd=CONVERSATIONS[parent][0],
                                            isSidechain=True, agentId=agent, ts="2026-01-01T11:00:00.000Z")))
    return files + [str(sub)]


def build_journal(folder):
    journal = Journal.open(str(folder / "journal.db"))
    stats = journal.import_files(write_corpus(folder / "projects"))
    assert not stats.errors, stats.errors
    return journal


def sync_corpus(journal, provider, url=None):
    settings = config.load({"database_url": url} if url else None)
    report = run_sync(settings, journal=journal, provider=provider, lock=False)
    assert not url or report.ok, report.errors
    return report


def local_searcher(journal, provider_factory):
    return Searcher(LocalSearch(journal), None, provider_factory)


def searcher_opener(journal, provider_factory, remote=None):
    """What an MCP server's lifespan calls: a Searcher on its own journal connection."""
    return lambda: Searcher(LocalSearch.open(journal.path), remote, provider_factory)


def sessions_of(result):
    return [h["session_id"] for h in result["hits"]]


def fulltext(journal, query, **filters):
    """Hits of an all-words full-text search of ``journal`` through the product's search path
    (no neighbours, no cap per session): what a test asks when it looks for stored words."""
    searcher = Searcher(LocalSearch(journal))
    return searcher.search(query, mode="fulltext", match="all", neighbours=0, per_session=0, limit=100,
                           max_chars=None, **filters)["hits"]


def store_session(session_id, messages, project="/work/proj", name=None, last_at="2026-11-01T10:00:00Z",
                  parent=None, machine_made=0):
    """A session written straight into the journal at the default path, as any door may have stored it
    (a transcript line, another machine's rows, an older version): ``messages`` are texts (a person's and
    the assistant's in turn) or ``(role, kind, text)``; ids, names and dates are taken as they are."""
    conn = db.connect(paths.journal_path())
    try:
        with conn:
            conn.execute("INSERT INTO sessions (id, parent_session_id, project_path, name, first_at, last_at, "
                         "next_seq, updated_at, machine_made) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (session_id, parent, project, name, last_at, last_at, len(messages), last_at,
                          machine_made))
            for seq, message in enumerate(messages):
                role, kind, text = message if isinstance(message, tuple) else (
                    "user" if seq % 2 == 0 else "assistant", "text", message)
                conn.execute("INSERT INTO messages (uuid, session, seq, role, kind, content, created_at) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (uuids.pack(f"{uuid.uuid5(uuid.NAMESPACE_OID, session_id)}-{seq}"),
                              writer.session_number(conn, session_id), seq, role, kind, text, last_at))
    finally:
        conn.close()


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture
def empty_journal():
    """A ``Journal`` at the isolated default path (``paths.journal_path()``), empty."""
    with Journal.open() as journal:
        yield journal


@pytest.fixture
def journal_conn():
    """A raw apsw connection to an empty journal at the isolated default path (schema migrated)."""
    conn = db.connect(paths.journal_path())
    yield conn
    conn.close()


@pytest.fixture
def corpus_journal(tmp_path):
    """The search corpus imported through the real import path into ``tmp_path/journal.db``."""
    journal = build_journal(tmp_path)
    yield journal
    journal.close()


@pytest.fixture
def synced_journal(corpus_journal):
    """``corpus_journal`` synced with ``HashEmbedder`` and no Postgres: the vectors are in the journal."""
    sync_corpus(corpus_journal, HashEmbedder())
    return corpus_journal


@pytest.fixture
def pg_synced_journal(corpus_journal, pg_db_url):
    """``corpus_journal`` synced with ``HashEmbedder`` into ``pg_db_url`` (and its vectors kept locally)."""
    sync_corpus(corpus_journal, HashEmbedder(), pg_db_url)
    return corpus_journal


@pytest.fixture
def hash_embedder():
    """A fresh ``HashEmbedder`` (``calls`` counts its batches)."""
    return HashEmbedder()


# The kept lines put back in the layout journal migration 0012 found them in (a session id in each row), for
# the tests of a journal from before it
# The messages and kept lines in the layout journal migration 0015 found them in (a session id in each
# message, no number; times as TEXT; no index of the filters, 0017): run with ``db._run_script`` (its
# ``-- swap``), outside a transaction (the foreign keys are off meanwhile)
OLD_NUMBERS_AND_TIMES = """
PRAGMA foreign_keys = OFF;
DROP INDEX IF EXISTS messages_filters;
CREATE TABLE messages_old (
    id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL, role TEXT NOT NULL,
    kind TEXT NOT NULL, content TEXT NOT NULL, created_at TEXT, message_id TEXT, is_sidechain INTEGER NOT NULL DEFAULT 0,
    file_id INTEGER REFERENCES transcripts(id) ON DELETE SET NULL,
    synced INTEGER NOT NULL DEFAULT 0, copy INTEGER NOT NULL DEFAULT 0, UNIQUE (session_id, seq));
INSERT INTO messages_old SELECT m.id, m.uuid, n.session_id, m.seq, m.role, m.kind, m.content, chats_time(m.created_at),
    m.message_id, m.is_sidechain, m.file_id, m.synced, m.copy FROM messages m JOIN session_numbers n ON n.number = m.session;
-- swap messages_old for messages
DROP TABLE messages_before;
CREATE TABLE raw_lines_old (
    id INTEGER PRIMARY KEY, session INTEGER NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, parent TEXT, line BLOB,
    packed INTEGER NOT NULL DEFAULT 0, created_at TEXT, synced INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session, key), UNIQUE (session, seq));
INSERT INTO raw_lines_old SELECT id, session, seq, key, parent, line, packed, chats_time(created_at), synced FROM raw_lines;
-- swap raw_lines_old for raw_lines
DROP TABLE raw_lines_before;
CREATE TABLE sessions_old (
    id TEXT PRIMARY KEY, parent_session_id TEXT, agent_id TEXT, project_path TEXT, git_branch TEXT, name TEXT,
    agent_name TEXT, summary TEXT, slug TEXT, first_at TEXT, last_at TEXT, machine TEXT,
    next_seq INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL, synced_at TEXT, ai_title TEXT, entrypoint TEXT,
    machine_made INTEGER NOT NULL DEFAULT 0);
INSERT INTO sessions_old SELECT * FROM sessions;
-- swap sessions_old for sessions
DROP TABLE sessions_before;
DELETE FROM session_numbers WHERE number NOT IN (SELECT session FROM raw_lines);
PRAGMA foreign_keys = ON;
"""

# A journal's uuids and keys as TEXT, as before migration 0013 (``localstore.uuids``): with ``db._run_script``
OLD_UUIDS = OLD_NUMBERS_AND_TIMES + """
UPDATE messages SET uuid = chats_uuid(uuid) WHERE typeof(uuid) = 'blob';
UPDATE raw_lines SET key = chats_uuid(key) WHERE typeof(key) = 'blob';
"""

OLD_KEPT_LINES = OLD_UUIDS + """
CREATE TABLE raw_lines_old (
    id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, parent TEXT,
    line BLOB, packed INTEGER NOT NULL DEFAULT 0, created_at TEXT, synced INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, key), UNIQUE (session_id, seq));
INSERT INTO raw_lines_old SELECT r.id, n.session_id, r.seq, r.key, r.parent, r.line, r.packed, r.created_at, r.synced
    FROM raw_lines r JOIN session_numbers n ON n.number = r.session;
DROP TABLE raw_lines;
DROP TABLE session_numbers;
ALTER TABLE raw_lines_old RENAME TO raw_lines;
CREATE INDEX raw_lines_pending ON raw_lines(id) WHERE synced = 0;
CREATE INDEX raw_lines_unpacked ON raw_lines(id) WHERE packed = 0;
"""


def kept_line_bytes(conn, where="line IS NOT NULL", args=()):
    """The bytes of the journal's kept lines (``raw_lines`` rows matching ``where``, in their order), as
    ``chats restore`` reads them: a line that refers to its messages' text with the texts put back."""
    return [keptlines.read_line(conn, *row) for row in conn.execute(
        f"SELECT n.session_id, chats_uuid(key), chats_time(created_at), line, packed FROM raw_lines JOIN session_numbers n ON n.number = raw_lines.session WHERE {where} "
        "ORDER BY n.session_id, seq",
        args)]


def store_files(journal, files, by):
    """``files`` stored in ``journal`` as ``chats import`` does (``by`` "import", lines packed as written) or
    as the hook does and ``chats sync`` then packs (``"hook then sync"``)."""
    if by == "import":
        assert not journal.import_files([str(p) for p in files]).errors
        return
    stats = writer.IngestStats()   # the hook: lines as read
    for path in files:
        writer.ingest_file(journal.conn, str(path), stats)
    assert journal.conn.execute("SELECT count(*) FROM raw_lines WHERE packed != 0 AND line IS NOT NULL").fetchall() \
        == [(0,)]   # the hook compresses nothing
    outbox.pack_raw_lines(journal.conn)
