-- Words of prompts known to be held by more messages than a prompt's recall hints count
-- (localstore/hints.py): each of a prompt's words is counted up to words.MATCH_ROWS + 1 messages,
-- which costs the hook about 0.2 ms a common word; one found that common is remembered here, with the
-- count it reached, and a later prompt takes that count instead of counting again. A journal only
-- grows, so the count still holds, until text leaves it: a message deleted (a purge) or its text
-- rewritten (redaction) forgets every word at once, in the same transaction.
CREATE TABLE IF NOT EXISTS common_words (word TEXT PRIMARY KEY, at_least INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS common_words_forget_deleted AFTER DELETE ON messages
    BEGIN DELETE FROM common_words; END;
CREATE TRIGGER IF NOT EXISTS common_words_forget_rewritten AFTER UPDATE OF content ON messages
    BEGIN DELETE FROM common_words; END;
