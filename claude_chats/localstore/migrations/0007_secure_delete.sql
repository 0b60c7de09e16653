-- Erasing without rewriting the whole file (issue 22): a purge deletes in place and each delete
-- leaves no byte of what it removed. Every writing connection runs with PRAGMA secure_delete = ON
-- (db.connect: freed cells and pages are zeroed), and FTS5's secure-delete option removes a deleted
-- document's entries from the index segments themselves (without it a delete only adds a marker and
-- the words stay in the old segments until a merge). The option is kept in messages_fts_config and
-- changes the FTS5 on-disk format: SQLite before 3.42 can no longer write this index.
INSERT INTO messages_fts(messages_fts, rank) VALUES ('secure-delete', 1);

-- A journal still empty has nothing that a connection without secure_delete left behind: it is clean
-- already. Any other is rewritten once, by the first purge after this migration (erase.scrub_file).
INSERT OR REPLACE INTO state (key, value)
    SELECT 'erased_in_place', 'since migration 0007'
    WHERE NOT EXISTS (SELECT 1 FROM messages) AND NOT EXISTS (SELECT 1 FROM raw_lines);
