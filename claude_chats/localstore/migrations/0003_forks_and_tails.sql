-- Forks (`claude --resume X --fork-session`, `/fork`): a session whose file begins with a copy
-- of another session's lines, uuids included. A message is a line of one session: the first
-- session to store a line keeps its bare uuid in messages.uuid; another session holding the
-- same line stores it as "<uuid>@<session id>" with copy = 1. A copy is read with its own
-- session (the fork reads whole) but left out of search and embedding (the text is found once).
ALTER TABLE messages ADD COLUMN copy INTEGER NOT NULL DEFAULT 0;

-- The bytes just before transcripts.offset (at most 64, ending with a newline). A file
-- rewritten in place (same inode, not shorter) no longer has them there, and is read again
-- from its start (what is stored already is recognised by its uuid).
ALTER TABLE transcripts ADD COLUMN tail BLOB;

-- The title Claude Code generates for a session (`ai-title`, since 2.1): a session's name is the
-- first of its /rename title, agent name, AI title, summary, slug.
ALTER TABLE sessions ADD COLUMN ai_title TEXT;

-- Transcript lines read and not stored, by reason ("bookkeeping", "api request log", "unknown type X"),
-- counted by every reader (the hook and `chats import`); `chats status` shows them.
CREATE TABLE skipped_lines (
    reason TEXT PRIMARY KEY,
    count  INTEGER NOT NULL
);

-- A turn's final answer recorded from the Stop (or SubagentStop) hook's payload
-- (`last_assistant_message`) because Claude Code had not yet written its line to the
-- transcript. When the line arrives, the message takes the line's uuid and leaves this
-- table; until then the row says the message stands in for a line still to come.
CREATE TABLE final_answers (
    message_id INTEGER PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE
);

-- Transcripts no hook of their own will ever name: the background session `/fork` starts (its
-- SessionStart is the only hook that fires for it). Every hook run reads them too, until they
-- have not changed for WATCH_DAYS (localstore/writer.py).
CREATE TABLE watched_transcripts (
    path       TEXT PRIMARY KEY,
    session_id TEXT,
    added_at   TEXT NOT NULL
);
