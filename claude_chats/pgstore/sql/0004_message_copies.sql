-- Forks: a session whose transcript begins with a copy of another session's lines. The copy
-- is stored with its own session (the fork reads whole) under the key "<uuid>@<session id>",
-- flagged here, and left out of search (its text is found once, in the session that has it
-- first). See the journal's migration 0003.
ALTER TABLE messages ADD COLUMN is_copy boolean NOT NULL DEFAULT false;
