-- heavy when: SELECT coalesce(max(id), 0) > 20000 FROM raw_lines
-- The kept lines name their conversation by a small integer (`session_numbers`) instead of its
-- 36-character id, which was in every row and led both unique indexes: 132 of the 591 bytes a
-- message the kept lines took at a million messages (BENCHMARKS.md, session 24). Every reader
-- joins `session_numbers` for the id.
--
-- Heavy: the table is written again, 7 s at a million messages (69 MB). A hook that finds it
-- pending on a journal above the size in the first line does not run it (`db.connect(defer_heavy=True)`
-- raises `MigrationDeferred`): it hands its turn to a process in the background that migrates, then
-- records the turn (`hook.hand_over`). Other processes run it, one at a time (`db.heavy_lock`).
-- One transaction: a kill leaves the journal as it was (but for the old table left to drop, below).

CREATE TABLE session_numbers (
    number     INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE          -- a conversation with kept lines (purge deletes it with them)
);
INSERT INTO session_numbers (session_id) SELECT DISTINCT session_id FROM raw_lines ORDER BY session_id;

DROP INDEX raw_lines_pending;
DROP INDEX raw_lines_unpacked;
ALTER TABLE raw_lines RENAME TO raw_lines_before;

CREATE TABLE raw_lines (
    id         INTEGER PRIMARY KEY,
    session    INTEGER NOT NULL,             -- session_numbers.number of the conversation
    seq        INTEGER NOT NULL,             -- order within the conversation, from 0
    key        TEXT NOT NULL,                -- the line's uuid; else "<crc32>@<uuid of the kept line before it>"
    parent     TEXT,                         -- links: the parentUuid of the line left out
    line       BLOB,                         -- the line, or zlib of it (redacted when journal_redact is on)
    packed     INTEGER NOT NULL DEFAULT 0,   -- 0: as read, 1: compressed whole (or a link), 2: referring
    created_at TEXT,                         -- the line's timestamp (purge tombstones cover lines up to a time)
    synced     INTEGER NOT NULL DEFAULT 0,   -- 0: pending for sync, 1: in Postgres
    UNIQUE (session, key),
    UNIQUE (session, seq)
);
INSERT INTO raw_lines (id, session, seq, key, parent, line, packed, created_at, synced)
SELECT r.id, n.number, r.seq, r.key, r.parent, r.line, r.packed, r.created_at, r.synced
FROM raw_lines_before r JOIN session_numbers n ON n.session_id = r.session_id ORDER BY r.id;
-- raw_lines_before is dropped after the commit, in a statement of its own (`db.drop_leftovers`): dropped
-- inside this transaction, its every page went into the statement journal, 605 MB of memory at 1M.

CREATE INDEX raw_lines_pending ON raw_lines(id) WHERE synced = 0;
CREATE INDEX raw_lines_unpacked ON raw_lines(id) WHERE packed = 0;
