-- A writer may index the messages it inserts itself, in one statement after them
-- (localstore/writer.py `_insert_messages`): the insert trigger then leaves them alone on its connection
-- (`chats_fts_later()`, 1 there while it inserts, 0 on every other connection: localstore/texts.py).
-- One statement a message left FTS5 a segment a message to merge (its savepoint flush).

DROP TRIGGER messages_fts_insert;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN NOT chats_repacking() AND NOT chats_fts_later() BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, CASE WHEN typeof(new.content) = 'text' THEN new.content ELSE chats_text(new.content) END);
END;
