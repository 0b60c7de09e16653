-- heavy when: SELECT coalesce(max(id), 0) > 20000 FROM messages
-- The columns a search filters and orders a message by, in an index of its own (`messages_filters`, 42
-- bytes a message at a million), which the searches that look messages up by id to filter them read
-- instead of the table (`db.MESSAGES_FILTERED`: ``INDEXED BY``; SQLite looks a rowid up in the table
-- otherwise). A message's row holds its text (about 780 bytes at 1M: 20 to a 16 KB page); this index holds
-- ~380 to a page, so the ~1,700 full-text matches a search ranks, or the 3,200 chunks a filtered vector
-- leg asks about, are read from a tenth of the pages (BENCHMARKS.md, session 34). No text: nothing a
-- purge must erase beyond what SQLite's secure_delete already zeroes with the row.
CREATE INDEX IF NOT EXISTS messages_filters ON messages (id, session, seq, kind, copy, role, created_at);
