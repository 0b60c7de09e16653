-- Tombstones the journal keeps (claude_chats/purge.py): what `chats purge` removed here, and the
-- tombstones of Postgres' `purges` table this machine's sync has seen. The write path (the hook,
-- `chats import`) consults the applied ones, so a purged session does not come back when its
-- transcript file is read again (a new inode: an editor, a file-sync tool, `chats restore`).
-- `before`: what was written up to this ISO-8601 UTC time is covered (a session continued later
-- keeps its new turns); for a tombstone from Postgres the earlier of its own date and the time this
-- machine first saw it, so a row dated in the future never covers what is recorded later.
-- state: 'applied' (in force), 'pending' (from Postgres, held until `chats purge --apply-remote`:
-- too many sessions at once), 'quarantined' (from Postgres, refused: `reason` says why).
CREATE TABLE tombstones (
    id         INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    target     TEXT NOT NULL,
    before     TEXT NOT NULL,
    state      TEXT NOT NULL DEFAULT 'applied' CHECK (state IN ('applied', 'pending', 'quarantined')),
    remote_id  INTEGER UNIQUE,               -- purges.id in Postgres; NULL: purged here
    machine    TEXT,                         -- the machine Postgres' row names (as it says, unchecked)
    reason     TEXT,                         -- why it is quarantined or pending
    sessions   INTEGER NOT NULL DEFAULT 0,   -- sessions it removed here (or would remove, when held)
    messages   INTEGER NOT NULL DEFAULT 0,
    seen_at    TEXT NOT NULL                 -- when this journal recorded it
);
CREATE INDEX tombstones_in_force ON tombstones(target) WHERE state = 'applied';
