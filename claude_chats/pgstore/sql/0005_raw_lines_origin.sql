-- Transcript lines kept for `chats restore` (the journal's migration 0004): pushed by sync so that
-- another machine syncing to this database can write a session back. `line` is zlib of the
-- line, redacted inside its JSON string values when `redact` is on (so still valid JSON); NULL
-- for a link (a line left out whose uuid other lines name as their parent).
CREATE TABLE raw_lines (
    conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    line_key        text NOT NULL,
    seq             integer NOT NULL,    -- order within the conversation (the pushing journal's)
    parent          text,
    line            bytea,
    created_at      timestamptz,
    PRIMARY KEY (conversation_id, line_key)
);

-- Where a conversation came from (the journal's sessions.entrypoint and machine_made): sessions
-- started by scripts and SDK runs are left out of search and session lists by default.
ALTER TABLE conversations ADD COLUMN entrypoint text;
ALTER TABLE conversations ADD COLUMN machine_made boolean NOT NULL DEFAULT false;
