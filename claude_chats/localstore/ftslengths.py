"""Each sealed full-text part's message lengths, kept beside it, so that a search ranks without asking FTS5.

bm25 needs every matched message's length in tokens. FTS5 answers ``xColumnSize`` with a statement on the
part's ``%_docsize`` table for each row: 1.4-2.2 us a match at a million messages, half of what ranking
the 2,000 matches of a common word costs (BENCHMARKS.md, session 32). A sealed part changes only by
losing messages (a purge, a redaction moving one to the head) or by ``ftsparts.maintain``'s moves, and each
of those changes its totals (``ftsparts.totals``: messages, tokens). So ``chats sync`` writes a sealed
part's lengths (``write``) with the totals they are of, and a search takes them (``Lengths``) only while
the part's totals are those: a part changed since ranks through FTS5 until the next sync writes it again.
The head, which every turn writes, is always asked of FTS5.

A part's row in ``fulltext_lengths`` (journal migration 0016): the lengths of ids ``first`` .. ``first + n
- 1`` as little-endian uint16, 0 for an id the part does not hold, ``LONG`` for a message that long or
longer (asked of FTS5). The values are FTS5's own: each message's ``%_docsize`` record, one varint per
column (one column here), decoded as ``ftsparts.totals`` decodes the averages record.
"""

import sys
from array import array

import apsw

from . import ftsparts
from .db import Immediate

LONG = 0xFFFF        # a length this or above is not kept: FTS5 is asked
SPAN_SLACK = 4       # a part's ids may span at most this many times its messages (plus SPAN_EXTRA) to be kept
SPAN_EXTRA = 65_536  # (a part of scattered ids, after moves, is left to FTS5 rather than kept mostly empty)
TABLE = "fulltext_lengths"


def write(conn, on_step=None):
    """The lengths of every sealed part whose row is missing or not of its present totals, a part a
    transaction (``on_step(part)`` after each); the rows of parts gone deleted. Returns the parts written."""
    if not _present(conn):
        return 0
    parts = ftsparts.tables(conn)[1:]
    with Immediate(conn):
        kept = {part: (rows, tokens) for part, rows, tokens in conn.execute(f"SELECT part, rows, tokens FROM {TABLE}")}
        gone = [part for part in kept if part not in parts]
        for part in gone:
            conn.execute(f"DELETE FROM {TABLE} WHERE part = ?", (part,))
    written = 0
    for part in parts:
        with Immediate(conn):
            totals = ftsparts.totals(conn, part)
            if kept.get(part) == totals:
                continue
            conn.execute(f"DELETE FROM {TABLE} WHERE part = ?", (part,))
            found = _lengths(conn, part)
            if found is not None:
                first, lengths = found
                conn.execute(f"INSERT INTO {TABLE} (part, rows, tokens, first, lengths) VALUES (?, ?, ?, ?, ?)",
                             (part, totals[0], totals[1], first, _little(lengths)))
                written += 1
        if on_step:
            on_step(part)
    return written


def forget(conn, parts):
    """The rows of ``parts`` deleted, in the caller's transaction (a purge: nothing of what it erased is kept)."""
    if _present(conn):
        for part in parts:
            conn.execute(f"DELETE FROM {TABLE} WHERE part = ?", (part,))


def _widest(rows):
    """The most ids a part of ``rows`` messages may span for its lengths to be kept (and read)."""
    return SPAN_SLACK * max(rows, 1) + SPAN_EXTRA


def _lengths(conn, part):
    """(first id, array of lengths) of ``part`` from its ``%_docsize``; None when it holds nothing or its ids
    are too scattered."""
    ftsparts.check(part)
    name = f"{part}_docsize"
    low, high, n = conn.execute(f"SELECT min(id), max(id), count(*) FROM {name}").fetchall()[0]
    if not n or high - low + 1 > _widest(n):
        return None
    lengths = array("H", bytes(2 * (high - low + 1)))
    varint = ftsparts.varint
    for rowid, size in conn.execute(f"SELECT id, sz FROM {name}"):
        length = varint(size or b"", 0)[0]
        lengths[rowid - low] = length if length < LONG else LONG
    return low, lengths


def _little(lengths):
    if sys.byteorder == "big":
        lengths = array("H", lengths)
        lengths.byteswap()
    return lengths.tobytes()


def _present(conn):
    return bool(conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)).fetchall())


class Lengths:
    """``of(part, totals)``: the part's kept lengths as ``(first id, array)`` when they are of ``totals``,
    else None; read once per part and state, and kept for the searches after."""

    def __init__(self, conn):
        self.conn = conn
        self._kept = {}   # {part: (totals, (first, array) or None)}

    def of(self, part, totals):
        kept = self._kept.get(part)
        if kept is not None and kept[0] == totals:
            return kept[1]
        value = self._read(part, totals)
        self._kept[part] = (totals, value)
        return value

    def keep_only(self, parts):
        """Forget the parts not in ``parts`` (dropped, combined away)."""
        for part in [p for p in self._kept if p not in parts]:
            del self._kept[part]

    def _read(self, part, totals):
        try:   # its size first (from the record's header): a row made to be huge is never read into memory
            found = self.conn.execute(f"SELECT rows, tokens, first, typeof(lengths), length(lengths) FROM {TABLE} "
                                      "WHERE part = ?", (part,)).fetchall()
        except apsw.SQLError:   # no such table: a journal this code has not migrated
            return None
        if not found:
            return None
        rows, tokens, first, kind, size = found[0]
        if (rows, tokens) != tuple(totals) or not isinstance(first, int) or kind != "blob" or size % 2 \
                or size // 2 > _widest(rows):
            return None
        (blob,) = self.conn.execute(f"SELECT lengths FROM {TABLE} WHERE part = ?", (part,)).fetchall()[0]
        lengths = array("H")
        lengths.frombytes(blob)
        if sys.byteorder == "big":
            lengths.byteswap()
        return first, lengths
