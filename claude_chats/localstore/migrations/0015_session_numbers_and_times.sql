-- heavy when: SELECT coalesce(max(id), 0) > 20000 FROM messages
-- Two fields of every message and kept line take less room:
--
-- * A message names its conversation by its number (`session_numbers`, as the kept lines have since
--   0012) instead of its 36-character id, which was in every row and led the (session, seq) index: 71
--   bytes a message at 100k. Readers join `session_numbers` for the id; writers take the number from
--   `writer.session_number`. A number stays while a message or a kept line names it (`erase`), which
--   the messages' foreign key checks.
-- * A message's and a kept line's time is stored as milliseconds since the epoch when it is in Claude
--   Code's own form (`2026-01-16T07:41:27.935Z`; `localstore/stamps.py`): 25 bytes as TEXT in every
--   message and every kept line. Readers take the text through `chats_time`, writers bind `stamps.pack`.
--   The column has no declared type now: a TEXT column turns every integer it is given into text.
-- * `sessions` becomes a WITHOUT ROWID table, clustered on its id: a reader's join from a message to
--   its session's row (its project, its origin) is one lookup there after the one in `session_numbers`,
--   as it was one through `sessions`' index and one in its table before (a full-text search at 1M: 10.3
--   against 11.3 ms p50 with the extra lookup, 11.2 before this migration).
--
-- The three tables are written again (`<table>_new`; messages and kept lines by 50,000 ids a statement: see 0013) and take the old
-- ones' places (`-- swap`, `db._swap`: their triggers and indexes made again as they were, the foreign
-- keys off meanwhile). The old tables are dropped after the commit (`db.LEFTOVERS`). One transaction:
-- a kill leaves the journal as it was. Heavy: the hook hands its turn over rather than wait (see 0012).

INSERT OR IGNORE INTO session_numbers (session_id) SELECT DISTINCT session_id FROM messages ORDER BY session_id;

CREATE TABLE messages_new (
    id           INTEGER PRIMARY KEY,         -- rowid: FTS5 content_rowid, chunks.message_id
    uuid         TEXT NOT NULL UNIQUE,        -- the line's uuid ("#n" suffix for the n-th block of a line)
    session      INTEGER NOT NULL REFERENCES session_numbers(number),   -- session_numbers.number of its conversation
    seq          INTEGER NOT NULL,            -- stable per-session sequence number, from 0
    role         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    content      TEXT NOT NULL,
    created_at,                               -- the line's time: milliseconds (stamps.pack), or TEXT as written
    message_id   TEXT,                        -- API message id shared by streamed assistant lines
    is_sidechain INTEGER NOT NULL DEFAULT 0,
    file_id      INTEGER REFERENCES transcripts(id) ON DELETE SET NULL,
    synced       INTEGER NOT NULL DEFAULT 0,  -- 0: pending for sync, 1: pushed
    copy         INTEGER NOT NULL DEFAULT 0,  -- 1: a fork's copy of a line another session stored first
    UNIQUE (session, seq)
);

-- each 50000 ids of messages:
INSERT INTO messages_new (id, uuid, session, seq, role, kind, content, created_at, message_id, is_sidechain, file_id, synced, copy) SELECT m.id, m.uuid, n.number, m.seq, m.role, m.kind, m.content, chats_pack_time(m.created_at), m.message_id, m.is_sidechain, m.file_id, m.synced, m.copy FROM messages m JOIN session_numbers n ON n.session_id = m.session_id WHERE m.id > ?1 AND m.id <= ?2 ORDER BY m.id;
-- swap messages_new for messages

CREATE TABLE raw_lines_new (
    id         INTEGER PRIMARY KEY,
    session    INTEGER NOT NULL,             -- session_numbers.number of the conversation
    seq        INTEGER NOT NULL,             -- order within the conversation, from 0
    key        TEXT NOT NULL,                -- the line's uuid; else "<crc32>@<uuid of the kept line before it>"
    parent     TEXT,                         -- links: the parentUuid of the line left out
    line       BLOB,                         -- the line, or zlib of it (redacted when journal_redact is on)
    packed     INTEGER NOT NULL DEFAULT 0,   -- 0: as read, 1: compressed whole (or a link), 2: referring
    created_at,                              -- the line's time (purge tombstones cover lines up to a time): as messages'
    synced     INTEGER NOT NULL DEFAULT 0,   -- 0: pending for sync, 1: in Postgres
    UNIQUE (session, key),
    UNIQUE (session, seq)
);

-- each 50000 ids of raw_lines:
INSERT INTO raw_lines_new (id, session, seq, key, parent, line, packed, created_at, synced) SELECT id, session, seq, key, parent, line, packed, chats_pack_time(created_at), synced FROM raw_lines WHERE id > ?1 AND id <= ?2 ORDER BY id;
-- swap raw_lines_new for raw_lines

CREATE TABLE sessions_new (
    id                TEXT PRIMARY KEY,   -- Claude Code session id; subagents: "<parent>:agent-<id>"
    parent_session_id TEXT,               -- subagents: the session that started them
    agent_id          TEXT,
    project_path      TEXT,               -- cwd of the session
    git_branch        TEXT,
    name              TEXT,               -- /rename custom title (last one wins)
    agent_name        TEXT,
    summary           TEXT,               -- Claude Code 'summary' line whose leaf is in the same file
    slug              TEXT,
    first_at          TEXT,               -- ISO-8601 timestamps of the first / last message
    last_at           TEXT,
    machine           TEXT,
    next_seq          INTEGER NOT NULL DEFAULT 0,
    updated_at        TEXT NOT NULL,      -- changes when name/summary/branch change (sync pushes it)
    synced_at         TEXT,               -- last time this row reached Postgres (NULL: never)
    ai_title          TEXT,
    entrypoint        TEXT,
    machine_made      INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

INSERT INTO sessions_new (id, parent_session_id, agent_id, project_path, git_branch, name, agent_name, summary, slug, first_at, last_at, machine, next_seq, updated_at, synced_at, ai_title, entrypoint, machine_made)
SELECT id, parent_session_id, agent_id, project_path, git_branch, name, agent_name, summary, slug, first_at, last_at, machine, next_seq, updated_at, synced_at, ai_title, entrypoint, machine_made
FROM sessions WHERE id IS NOT NULL ORDER BY id;   -- (a rowid table's PRIMARY KEY lets a NULL in: no writer stores one)
-- swap sessions_new for sessions
