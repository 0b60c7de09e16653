-- What `chats status`, sync's backlog and search's coverage note count, kept by triggers instead of
-- scanned from every message (a full read of the messages table: a second at 1M messages).
-- message_counts: the messages and their characters (length(content)) by kind, synced, copy (a fork's
-- copy) and blank (content empty after trimming spaces, tabs, newlines: never embedded).
-- vector_counts: of those, the messages that have vectors (at least one chunk) in a space, by the same key,
-- so "without vectors" is the difference, group by group. space_chunks: the vectors (chunks) of each
-- space. localstore/counts.py reads them.
-- The hook pays one upsert per message stored; messages' other writers (sync marking them synced, purge,
-- redaction rewrites) and chunk writes pay theirs.
CREATE TABLE message_counts (
    kind     TEXT NOT NULL,
    synced   INTEGER NOT NULL,
    copy     INTEGER NOT NULL,
    blank    INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    chars    INTEGER NOT NULL,
    PRIMARY KEY (kind, synced, copy, blank)
) WITHOUT ROWID;

CREATE TABLE vector_counts (
    space_id INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    synced   INTEGER NOT NULL,
    copy     INTEGER NOT NULL,
    blank    INTEGER NOT NULL,
    messages INTEGER NOT NULL,
    chars    INTEGER NOT NULL,
    PRIMARY KEY (space_id, kind, synced, copy, blank)
) WITHOUT ROWID;

CREATE TABLE space_chunks (
    space_id INTEGER PRIMARY KEY,
    chunks   INTEGER NOT NULL
);

INSERT INTO space_chunks (space_id, chunks) SELECT space_id, count(*) FROM chunks GROUP BY space_id;

INSERT INTO message_counts (kind, synced, copy, blank, messages, chars)
SELECT kind, synced, copy, trim(content, char(32, 9, 10)) = '', count(*), sum(length(content))
FROM messages GROUP BY 1, 2, 3, 4;

INSERT INTO vector_counts (space_id, kind, synced, copy, blank, messages, chars)
SELECT c.space_id, m.kind, m.synced, m.copy, trim(m.content, char(32, 9, 10)) = '', count(*), sum(length(m.content))
FROM (SELECT DISTINCT space_id, message_id FROM chunks) c JOIN messages m ON m.id = c.message_id
GROUP BY 1, 2, 3, 4, 5;

CREATE TRIGGER message_counts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO message_counts (kind, synced, copy, blank, messages, chars)
    VALUES (new.kind, new.synced, new.copy, trim(new.content, char(32, 9, 10)) = '', 1, length(new.content))
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
END;

-- Before the row goes: its chunks are deleted first, while the chunk trigger can still read the message
-- (ON DELETE CASCADE would find none left).
CREATE TRIGGER message_counts_delete_chunks BEFORE DELETE ON messages BEGIN
    DELETE FROM chunks WHERE message_id = old.id;
END;

CREATE TRIGGER message_counts_delete AFTER DELETE ON messages BEGIN
    UPDATE message_counts SET messages = messages - 1, chars = chars - length(old.content)
    WHERE kind = old.kind AND synced = old.synced AND copy = old.copy
      AND blank = (trim(old.content, char(32, 9, 10)) = '');
END;

CREATE TRIGGER message_counts_update AFTER UPDATE OF kind, content, synced, copy ON messages BEGIN
    UPDATE message_counts SET messages = messages - 1, chars = chars - length(old.content)
    WHERE kind = old.kind AND synced = old.synced AND copy = old.copy
      AND blank = (trim(old.content, char(32, 9, 10)) = '');
    INSERT INTO message_counts (kind, synced, copy, blank, messages, chars)
    VALUES (new.kind, new.synced, new.copy, trim(new.content, char(32, 9, 10)) = '', 1, length(new.content))
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
    UPDATE vector_counts SET messages = messages - 1, chars = chars - length(old.content)
    WHERE space_id IN (SELECT space_id FROM chunks WHERE message_id = old.id)
      AND kind = old.kind AND synced = old.synced AND copy = old.copy
      AND blank = (trim(old.content, char(32, 9, 10)) = '');
    INSERT INTO vector_counts (space_id, kind, synced, copy, blank, messages, chars)
    SELECT DISTINCT space_id, new.kind, new.synced, new.copy, trim(new.content, char(32, 9, 10)) = '', 1,
           length(new.content) FROM chunks WHERE message_id = new.id
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
END;

-- A message's first chunk in a space counts it there; its last chunk going uncounts it.
CREATE TRIGGER vector_counts_insert AFTER INSERT ON chunks
WHEN NOT EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = new.space_id AND c.message_id = new.message_id
                 AND c.id != new.id) BEGIN
    INSERT INTO vector_counts (space_id, kind, synced, copy, blank, messages, chars)
    SELECT new.space_id, kind, synced, copy, trim(content, char(32, 9, 10)) = '', 1, length(content)
    FROM messages WHERE id = new.message_id
    ON CONFLICT DO UPDATE SET messages = messages + 1, chars = chars + excluded.chars;
END;

CREATE TRIGGER vector_counts_delete AFTER DELETE ON chunks
WHEN NOT EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = old.space_id AND c.message_id = old.message_id) BEGIN
    UPDATE vector_counts SET messages = messages - 1, chars = chars - (
        SELECT length(m.content) FROM messages m WHERE m.id = old.message_id)
    WHERE (space_id, kind, synced, copy, blank) IN (
        SELECT old.space_id, kind, synced, copy, trim(content, char(32, 9, 10)) = ''
        FROM messages WHERE id = old.message_id);
END;

CREATE TRIGGER space_chunks_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO space_chunks (space_id, chunks) VALUES (new.space_id, 1)
    ON CONFLICT DO UPDATE SET chunks = chunks + 1;
END;

CREATE TRIGGER space_chunks_delete AFTER DELETE ON chunks BEGIN
    UPDATE space_chunks SET chunks = chunks - 1 WHERE space_id = old.space_id;
END;

CREATE TRIGGER vector_counts_space_delete AFTER DELETE ON spaces BEGIN
    DELETE FROM vector_counts WHERE space_id = old.id;
    DELETE FROM space_chunks WHERE space_id = old.id;
END;
