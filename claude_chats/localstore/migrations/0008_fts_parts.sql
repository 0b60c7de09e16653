-- The full-text index in parts (issue 22, localstore/ftsparts.py): messages_fts stays the head, where the
-- hook's trigger writes every new message; `chats import` and `chats sync` seal a full head into a part,
-- messages_fts_<8 digits>, and start an empty one, so that a purge merges the parts its session is in,
-- not the whole index. A message is in exactly one of these tables: the delete and update triggers find
-- it by that table's docsize row (ftsparts.write_triggers writes them again whenever the parts change).
-- With the head alone, as here, they do what the triggers of migration 0001 did.
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) SELECT 'delete', old.id, old.content
    WHERE EXISTS (SELECT 1 FROM messages_fts_docsize WHERE id = old.id);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) SELECT 'delete', old.id, old.content
    WHERE EXISTS (SELECT 1 FROM messages_fts_docsize WHERE id = old.id);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END;
