-- The local journal: sessions, messages, FTS5 index, transcript cursors,
-- embedding spaces and chunk bookkeeping. Never edit a released migration;
-- add the next numbered file.

CREATE TABLE sessions (
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
    synced_at         TEXT                -- last time this row reached Postgres (NULL: never)
);
CREATE INDEX sessions_project ON sessions(project_path);
CREATE INDEX sessions_parent ON sessions(parent_session_id);
CREATE INDEX sessions_last ON sessions(last_at);

CREATE TABLE transcripts (
    id         INTEGER PRIMARY KEY,
    path       TEXT NOT NULL UNIQUE,
    device     INTEGER,
    inode      INTEGER,
    offset     INTEGER NOT NULL DEFAULT 0,   -- bytes consumed: always just past a newline
    warmup     INTEGER,                       -- subagent files: 1 = "Warmup", skipped; NULL = undecided
    updated_at TEXT
);

-- Claude Code 'summary' lines whose leaf message has not been read yet (it may
-- come later in the same file, in a later hook run).
CREATE TABLE pending_summaries (
    file_id   INTEGER NOT NULL REFERENCES transcripts(id) ON DELETE CASCADE,
    leaf_uuid TEXT NOT NULL,
    summary   TEXT NOT NULL,
    PRIMARY KEY (file_id, leaf_uuid)
);

CREATE TABLE messages (
    id           INTEGER PRIMARY KEY,         -- rowid: FTS5 content_rowid, chunks.message_id
    uuid         TEXT NOT NULL UNIQUE,        -- the line's uuid ("#n" suffix for the n-th block of a line)
    session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,            -- stable per-session sequence number, from 0
    role         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    content      TEXT NOT NULL,
    created_at   TEXT,
    message_id   TEXT,                        -- API message id shared by streamed assistant lines
    is_sidechain INTEGER NOT NULL DEFAULT 0,
    file_id      INTEGER REFERENCES transcripts(id) ON DELETE SET NULL,
    synced       INTEGER NOT NULL DEFAULT 0,  -- 0: pending for sync, 1: pushed
    UNIQUE (session_id, seq)
);
CREATE INDEX messages_pending ON messages(id) WHERE synced = 0;
CREATE INDEX messages_file ON messages(file_id);

CREATE VIRTUAL TABLE messages_fts USING fts5(
    content, content='messages', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;

-- Embedding spaces: provider + model + dimensions + options. Vectors of a space
-- live in a sqlite-vec table vec_<id> created by the vectors module; chunks maps
-- those rows back to messages. Vectors of different spaces are never compared.
CREATE TABLE spaces (
    id         INTEGER PRIMARY KEY,
    key        TEXT NOT NULL UNIQUE,          -- canonical "provider/model/dimensions/options"
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    options    TEXT NOT NULL DEFAULT '{}',    -- JSON
    canary     BLOB,                          -- float32 embedding of the canary sentence
    created_at TEXT NOT NULL
);

CREATE TABLE chunks (
    id          INTEGER PRIMARY KEY,          -- = rowid in vec_<space_id>
    space_id    INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    message_id  INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    chunk_index INTEGER NOT NULL,
    start_char  INTEGER NOT NULL,
    end_char    INTEGER NOT NULL,
    UNIQUE (space_id, message_id, chunk_index)
);
CREATE INDEX chunks_message ON chunks(message_id);

-- Small facts for `chats status`: last hook run, last error, last sync...
CREATE TABLE state (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
