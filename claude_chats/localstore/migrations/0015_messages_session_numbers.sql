-- heavy when: SELECT coalesce(max(id), 0) > 20000 FROM messages
-- A message names its conversation by its number (`session_numbers`, as the kept lines have since
-- 0012) instead of its 36-character id, which was in every row and led the (session, seq) index:
-- 76 of the 2,575 bytes a message took at a million messages (BENCHMARKS.md, session 26). Readers
-- join `session_numbers` for the id; writers take the number from `writer.session_number`. A number
-- stays while a message or a kept line names it (`erase`), which its foreign key checks.
--
-- The table is written again (`messages_new`, by 50,000 ids a statement: see 0013) and takes the old
-- one's place (`-- swap`, `db._swap`: its triggers and indexes made again as they were, the foreign
-- keys off meanwhile). The old table is dropped after the commit (`db.LEFTOVERS`). One transaction:
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
    created_at   TEXT,
    message_id   TEXT,                        -- API message id shared by streamed assistant lines
    is_sidechain INTEGER NOT NULL DEFAULT 0,
    file_id      INTEGER REFERENCES transcripts(id) ON DELETE SET NULL,
    synced       INTEGER NOT NULL DEFAULT 0,  -- 0: pending for sync, 1: pushed
    copy         INTEGER NOT NULL DEFAULT 0,  -- 1: a fork's copy of a line another session stored first
    UNIQUE (session, seq)
);

-- each 50000 ids of messages:
INSERT INTO messages_new (id, uuid, session, seq, role, kind, content, created_at, message_id, is_sidechain, file_id, synced, copy) SELECT m.id, m.uuid, n.number, m.seq, m.role, m.kind, m.content, m.created_at, m.message_id, m.is_sidechain, m.file_id, m.synced, m.copy FROM messages m JOIN session_numbers n ON n.session_id = m.session_id WHERE m.id > ?1 AND m.id <= ?2 ORDER BY m.id;
-- swap messages_new for messages
