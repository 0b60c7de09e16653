-- Purges (`chats purge`) that still have to reach Postgres: it was unreachable
-- when the person purged. The next `chats sync` deletes the conversations
-- there, records a tombstone every other machine applies, and removes the row.
CREATE TABLE purge_queue (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL CHECK (kind IN ('session', 'project')),
    target     TEXT NOT NULL,           -- a session id, or a project path (the folder and below)
    created_at TEXT NOT NULL            -- ISO-8601 UTC: sessions started later are not purged elsewhere
);
