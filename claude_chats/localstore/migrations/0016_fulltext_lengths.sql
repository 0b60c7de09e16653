-- Each sealed full-text part's message lengths in tokens, kept beside it (`localstore/ftslengths.py`): a
-- search's bm25 reads a matched message's length here instead of asking FTS5, which runs a statement on
-- the part's `%_docsize` for every match (1.4-2.2 us each, half of ranking 2,000 matches at a million
-- messages). Written by `chats sync` (`ftslengths.write`) with the part's totals (messages, tokens) they
-- are of; used only while the part's totals are still those. Empty until then: searches ask FTS5.
CREATE TABLE IF NOT EXISTS fulltext_lengths (
    part    TEXT PRIMARY KEY,    -- a sealed part's name (ftsparts: messages_fts_<8 digits>)
    rows    INTEGER NOT NULL,    -- the part's totals when written (ftsparts.totals)
    tokens  INTEGER NOT NULL,
    first   INTEGER NOT NULL,    -- the id of the first length
    lengths BLOB NOT NULL        -- uint16 little-endian, ids first .. first + n - 1 (0: not in the part;
                                 -- 65535: that long or longer, asked of FTS5)
);   -- (a rowid table: a WITHOUT ROWID one reads a whole overflowing row to compare its key in a seek)
