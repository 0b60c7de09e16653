-- heavy when: SELECT coalesce(max(id), 0) > 20000 FROM messages
-- The columns a search places and filters a message by, but for its role and time, in an index of their own
-- (`messages_filters`: 26.5 bytes a message at a million), which the statements that look messages up by id
-- read instead of the table when they name no other column of it (`LocalSearch._messages`: INDEXED BY;
-- SQLite would look each rowid up in the table). A message's row holds its text (about 780 bytes at 1M:
-- 20 to a 16 KB page); this index ~600 entries to a page, so the ~1,700 full-text matches a search ranks,
-- or the chunks a vector leg looks up, are read from far fewer pages (BENCHMARKS.md, session 34). Role and
-- time are left out to keep the journal within 2.5 KB a message (42 bytes with them). No text in it: nothing
-- a purge must erase beyond what secure_delete zeroes with the row.
CREATE INDEX IF NOT EXISTS messages_filters ON messages (id, session, seq, kind, copy);
