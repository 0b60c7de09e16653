-- Full text split into words as the journal's FTS5 tokenizer (unicode61) splits them: ASCII
-- punctuation is a word break. Postgres' own parser keeps a file path, URL, e-mail address,
-- version number or dotted name as one lexeme ('src/claude_chats/config.py'), so a search for
-- "config" did not find it in Postgres while the journal did (issue 16, item 13). The column
-- keeps its name and type: readers of the previous version still work. Dropping and adding it
-- rewrites the table once (a generated expression cannot be altered before PostgreSQL 17).
ALTER TABLE messages DROP COLUMN content_tsv;
ALTER TABLE messages ADD COLUMN content_tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', regexp_replace(content, '[[:punct:]]+', ' ', 'g'))) STORED;
CREATE INDEX messages_content_tsv ON messages USING gin (content_tsv);
-- bm25's document length as the journal counts it (FTS5: the tokens of a message), written by
-- sync with each message (search.core.word_count); here, for the rows already stored, the last
-- word position of the new tsvector (the same count, but for stop words at the very end).
-- NULL (a row pushed by a previous version): search falls back to the tsvector's lexeme count.
ALTER TABLE messages ADD COLUMN content_words integer;
UPDATE messages SET content_words =
    (SELECT coalesce(max(p), 0) FROM unnest(content_tsv) AS u, unnest(u.positions) AS p);
