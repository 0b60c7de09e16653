-- Transcript lines as Claude Code wrote them, for `chats restore` (claude_chats/rawlines.py says
-- which lines are kept). One row per line of one conversation (a subagent's lines are its own
-- conversation, "<session>:agent-<id>"), in the order they arrived. `line` is the line's bytes
-- compressed with zlib; NULL for a link: a line not kept whose uuid other lines name as their
-- parentUuid (an attachment/prompt_snapshot, a progress line), so restore can join the chain
-- around it. No foreign key to sessions: a session's lines may arrive before its first message;
-- purge deletes them explicitly.
CREATE TABLE raw_lines (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,             -- order within the conversation, from 0
    key        TEXT NOT NULL,                -- the line's uuid; else "<crc32>@<uuid of the kept line before it>"
    parent     TEXT,                         -- links: the parentUuid of the line left out
    line       BLOB,                         -- zlib of the line (redacted when journal_redact is on)
    created_at TEXT,                         -- the line's timestamp (purge tombstones cover lines up to a time)
    synced     INTEGER NOT NULL DEFAULT 0,   -- 0: pending for sync, 1: in Postgres
    UNIQUE (session_id, key),
    UNIQUE (session_id, seq)
);
CREATE INDEX raw_lines_pending ON raw_lines(id) WHERE synced = 0;

-- What the reader of a transcript file does with its lines from here on (carried across hook runs,
-- like `warmup`): NULL records them; 'project' keeps the whole file out (its cwd is in the
-- exclude_projects setting, or its parent session's lines were kept out when it started);
-- 'off' keeps out the rest of the file (a prompt said #chats-off); 'skip' keeps out the turn a
-- prompt marked #chats-skip, until the next prompt.
ALTER TABLE transcripts ADD COLUMN capture TEXT;
-- The uuid of the last kept line read from the file: a line without a uuid of its own is keyed by it.
ALTER TABLE transcripts ADD COLUMN last_uuid TEXT;

-- Where a session came from: `entrypoint` of its first line that has one (`cli` interactive,
-- `sdk-cli` for `claude -p`, `sdk-ts` / `sdk-py` for the Agent SDK; older transcripts have none),
-- and whether it is machine-made (an sdk-* entrypoint, or recorded by a hook that ran with
-- CLAUDE_CHATS_MACHINE_MADE=1): left out of search, session lists and recall hints by default.
ALTER TABLE sessions ADD COLUMN entrypoint TEXT;
ALTER TABLE sessions ADD COLUMN machine_made INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_machine_made ON sessions(id) WHERE machine_made = 1;
