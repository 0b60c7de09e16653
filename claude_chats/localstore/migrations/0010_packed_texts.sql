-- A message's text may be kept packed (localstore/texts.py): `messages.content` is then a BLOB that
-- only the journal's SQL functions read (`chats_text`: the text; `chats_length`: its length in
-- characters, without unpacking). The triggers that read the text read it through them, a TEXT value
-- directly (no call into Python for the hook's and the import's rows). A packed text is never blank
-- (texts.pack).
-- Packing rewrites a range of messages as they were but for the text (deleted and inserted again with
-- the same ids, so that their pages are written full: a row made smaller in place leaves its page as
-- big as it was). Nothing else changes, so the triggers on messages do nothing while the packing
-- connection says so (`chats_repacking()`, 1 on that connection alone).
-- (The full-text index's delete and update triggers name its parts: ftsparts.write_triggers writes
-- them, before the first text is packed.)

DROP TRIGGER messages_fts_insert;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN NOT chats_repacking() BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, CASE WHEN typeof(new.content) = 'text' THEN new.content ELSE chats_text(new.content) END);
END;

DROP TRIGGER message_counts_insert;
CREATE TRIGGER message_counts_insert AFTER INSERT ON messages WHEN NOT chats_repacking() BEGIN
    INSERT INTO message_counts (kind, synced, copy, blank, messages, chars)
    VALUES (new.kind, new.synced, new.copy, typeof(new.content) = 'text' AND trim(new.content, char(32, 9, 10)) = '',
            1, CASE WHEN typeof(new.content) = 'text' THEN length(new.content) ELSE chats_length(new.content) END)
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
END;

DROP TRIGGER message_counts_delete_chunks;
CREATE TRIGGER message_counts_delete_chunks BEFORE DELETE ON messages WHEN NOT chats_repacking() BEGIN
    DELETE FROM chunks WHERE message_id = old.id;
END;

DROP TRIGGER message_counts_delete;
CREATE TRIGGER message_counts_delete AFTER DELETE ON messages WHEN NOT chats_repacking() BEGIN
    UPDATE message_counts SET messages = messages - 1, chars = chars - CASE WHEN typeof(old.content) = 'text' THEN length(old.content) ELSE chats_length(old.content) END
    WHERE kind = old.kind AND synced = old.synced AND copy = old.copy
      AND blank = (typeof(old.content) = 'text' AND trim(old.content, char(32, 9, 10)) = '');
END;

DROP TRIGGER message_counts_update;
CREATE TRIGGER message_counts_update AFTER UPDATE OF kind, content, synced, copy ON messages BEGIN
    UPDATE message_counts SET messages = messages - 1, chars = chars - CASE WHEN typeof(old.content) = 'text' THEN length(old.content) ELSE chats_length(old.content) END
    WHERE kind = old.kind AND synced = old.synced AND copy = old.copy
      AND blank = (typeof(old.content) = 'text' AND trim(old.content, char(32, 9, 10)) = '');
    INSERT INTO message_counts (kind, synced, copy, blank, messages, chars)
    VALUES (new.kind, new.synced, new.copy, typeof(new.content) = 'text' AND trim(new.content, char(32, 9, 10)) = '',
            1, CASE WHEN typeof(new.content) = 'text' THEN length(new.content) ELSE chats_length(new.content) END)
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
    UPDATE vector_counts SET messages = messages - 1, chars = chars - CASE WHEN typeof(old.content) = 'text' THEN length(old.content) ELSE chats_length(old.content) END
    WHERE space_id IN (SELECT space_id FROM chunks WHERE message_id = old.id)
      AND kind = old.kind AND synced = old.synced AND copy = old.copy
      AND blank = (typeof(old.content) = 'text' AND trim(old.content, char(32, 9, 10)) = '');
    INSERT INTO vector_counts (space_id, kind, synced, copy, blank, messages, chars)
    SELECT DISTINCT space_id, new.kind, new.synced, new.copy,
           typeof(new.content) = 'text' AND trim(new.content, char(32, 9, 10)) = '', 1,
           CASE WHEN typeof(new.content) = 'text' THEN length(new.content) ELSE chats_length(new.content) END FROM chunks WHERE message_id = new.id
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
END;

DROP TRIGGER vector_counts_insert;
CREATE TRIGGER vector_counts_insert AFTER INSERT ON chunks
WHEN NOT EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = new.space_id AND c.message_id = new.message_id
                 AND c.id != new.id) BEGIN
    INSERT INTO vector_counts (space_id, kind, synced, copy, blank, messages, chars)
    SELECT new.space_id, kind, synced, copy, typeof(content) = 'text' AND trim(content, char(32, 9, 10)) = '', 1,
           CASE WHEN typeof(content) = 'text' THEN length(content) ELSE chats_length(content) END
    FROM messages WHERE id = new.message_id
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
END;

DROP TRIGGER vector_counts_delete;
CREATE TRIGGER vector_counts_delete AFTER DELETE ON chunks
WHEN NOT EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = old.space_id AND c.message_id = old.message_id) BEGIN
    UPDATE vector_counts SET messages = messages - 1, chars = chars - (
        SELECT CASE WHEN typeof(m.content) = 'text' THEN length(m.content) ELSE chats_length(m.content) END FROM messages m WHERE m.id = old.message_id)
    WHERE (space_id, kind, synced, copy, blank) IN (
        SELECT old.space_id, kind, synced, copy, typeof(content) = 'text' AND trim(content, char(32, 9, 10)) = ''
        FROM messages WHERE id = old.message_id);
END;

DROP TRIGGER common_words_forget_deleted;
CREATE TRIGGER common_words_forget_deleted AFTER DELETE ON messages WHEN NOT chats_repacking()
    BEGIN DELETE FROM common_words; END;
