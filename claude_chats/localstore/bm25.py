"""bm25 over every table of the full-text index, as one table would rank (``ftsparts``).

FTS5's own ``bm25()`` takes its statistics from the table it runs in: with the index in parts, a
word's rarity and the average message length would be a part's, and the same query would rank
differently than over one table (at a million messages, 0.86 of the top 10 in common, the top hit
the same for 7 of 12 queries; scripts/bench_fts_parts.py). ``Ranker`` is FTS5's bm25 (fts5_aux.c:
k1 1.2, b 0.75, IDF ``log((N - n + 0.5) / (n + 0.5))`` floored at 1e-6, a phrase's frequency its
instances in the row) with ``N``, the average length and each phrase's ``n`` summed over every table,
so the score of a message is what ``bm25()`` gives it in one table holding every message.

The phrases are read from the MATCH expression: the search builds them all as quoted strings
(``fts.quote``), in the order FTS5 numbers them. A journal with one table ranks with ``bm25()`` itself.
"""

import math

import apsw

from . import ftslengths, ftsparts

FUNCTION = "chats_bm25"   # and the ranker's number: ``chats_bm25_3``
_MADE = [0]               # rankers made in this process (each registers a function of its own)
K1, B = 1.2, 0.75
_ONE_MINUS_B, _K1_PLUS_1 = 1 - B, K1 + 1.0   # (``Ranker._score``)
COUNTS_KEPT = 10_000   # phrase counts kept for one state of the journal, at most
PART_COUNTS_KEPT = 100_000   # phrase counts of sealed parts kept across states (``_count``), at most
_LONG = ftslengths.LONG
_UNREAD = object()   # a table's kept lengths not read yet (``Ranker.score`` reads them)


def phrases(match):
    """The quoted phrases of an FTS5 expression (``"..."``, a doubled quote inside), in order. No `re`:
    the hook's hints rank with this."""
    found, start, at = [], None, 0
    while at < len(match):
        if match[at] == '"':
            if start is None:
                start = at
            elif match[at + 1:at + 2] == '"':
                at += 1                      # a quote inside the phrase
            else:
                found.append(match[start:at + 1])
                start = None
        at += 1
    return found


class Ranker:
    """``score(table)``: the SQL of a message's bm25 for the expression last ``prepare``d, over ``names``.

    ``lengths``: a sealed part's message lengths are read from what ``chats sync`` keeps of them
    (``ftslengths``) rather than asked of FTS5 row by row, from the second expression ranked on (a
    process searching once does not read them); the same lengths, so the same scores. A searching
    process's choice: the hook's hints, a fresh process a prompt, rank a few hundred rows and read nothing
    more."""

    def __init__(self, conn, lengths=False):
        self.conn = conn
        self._lengths = ftslengths.Lengths(conn) if lengths else None
        self._kept_lengths, self._which = [], {}   # per table prepared: (first, array) or None; its number
        self._ranked = 0   # expressions prepared: a process's first asks FTS5 (reading a part's lengths, 0.6 ms
        #                    at 131,072 messages, pays for itself from ~400 matches in it, and then again each search)
        self.idf, self.avgdl = None, 1.0
        self.hits = []   # messages holding each phrase of the expression prepared, over every table
        self._registered = self._kept_registered = False
        self._prepared = None   # what the statistics are of: the expression, the tables, the journal's state
        self._state, self._counts = None, {}   # {phrase: messages holding it} in that state (``counted``)
        self._tokenizer, self._vocabularies = None, set()   # (``_count``)
        self._stamps, self._parts = {}, {}   # each table's totals as ``prepare`` read them; kept part counts
        # A name of its own: a statement already prepared keeps the function FTS5 found for its name then
        # (apsw caches statements), so a second ranker on the same connection under one name was scored
        # with the first one's statistics ("4 phrases in the query, 2 prepared").
        _MADE[0] += 1
        self.function = f"{FUNCTION}_{_MADE[0]}"

    def prepare(self, match, names):
        """Statistics of ``match`` over the tables ``names``: the rows, tokens, and messages holding each
        phrase (a count per phrase and table, as ``bm25()`` counts in its one table)."""
        if len(names) == 1:
            self.idf = None
            return
        counts = self._in_state(names)
        key = (match, self._state)
        if key == self._prepared:
            return
        if not self._registered:
            self.conn.register_fts5_function(self.function, self._score)
            self._registered = True
        rows = tokens = 0
        for name in names:
            r, t = self._stamps[name] = ftsparts.totals(self.conn, name)
            rows, tokens = rows + r, tokens + t
        self.avgdl = tokens / rows if rows else 1.0
        self._ranked += 1
        if self._lengths is not None and self._ranked > 1:   # a part's read as a statement first ranks in it
            self._which = {name: i for i, name in enumerate(names)}
            self._lengths.keep_only(names)
            self._kept_lengths = [_UNREAD] * len(names)
        self.idf, self.hits = [], []
        for phrase in phrases(match):
            hits = counts.get(phrase)
            if hits is None:
                hits = counts[phrase] = self._count(phrase, names)
            self.hits.append(hits)
            idf = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows else 0.0
            self.idf.append(idf if idf > 0.0 else 1e-6)
        self._prepared = key

    def most(self, match, names):
        """At most how many messages ``match`` matches over ``names``, from its phrases' counts (``prepare``
        has them): their sum when OR alone joins them, the least when AND does (written or implied), a
        lone phrase's count; None for any other expression, and over one table (``bm25()`` counts there)."""
        found, rest = phrases(match), match
        for phrase in found:
            rest = rest.replace(phrase, " ", 1)   # in order: what is left is what joins them
        joins = set(rest.split())
        if not found or len(names) == 1 or not (joins <= {"OR"} or joins <= {"AND"}):
            return None
        self.prepare(match, names)
        return sum(self.hits) if "OR" in joins else min(self.hits)

    def counted(self, found, names):
        """``found``: {phrase: messages holding it over the tables ``names``}, counted exactly by the caller
        in the journal's present state (the search's ``selective`` counts its words): ``prepare`` takes
        them rather than counting again (at a million messages in 17 tables, 9 ms of a 39 ms full-text
        search was counting)."""
        self._in_state(names).update(found)

    def matches(self, phrase, names, limit):
        """``ftsparts.count_matches``: how many messages match ``phrase`` over ``names``, counted up to ``limit``,
        with a sealed part's kept count (``_count``) in place of reading it; a part read whole (its count
        below what was still missing) has its count kept. The search's words are counted this way, so a
        word searched before is not read again in the 16 parts after a hook's turn."""
        self._in_state(names)
        total = 0
        for name in names:
            stamp, kept = self._kept(phrase, name)
            if kept is not None:
                total += kept
            else:
                missing = limit - total
                found = ftsparts.count_in(self.conn, name, phrase, missing)
                if stamp is not None and found < missing:
                    self._keep(phrase, name, stamp, found)
                total += found
            if total >= limit:
                return limit
        return total

    def _in_state(self, names):
        """The phrase counts of the journal's present state over ``names`` (forgotten when either changes),
        and the tables' totals read in it (``_kept``)."""
        state = (tuple(names), self.conn.execute("PRAGMA data_version").fetchall()[0][0], self.conn.total_changes())
        if state != self._state or len(self._counts) > COUNTS_KEPT:
            self._state, self._counts, self._stamps = state, {}, {}
        return self._counts

    def _kept(self, phrase, name):
        """(the table's stamp, the count kept of ``phrase`` in it or None). The stamp is a sealed part's totals
        in the present state (``_in_state``), what its counts are kept with; None for the head (its counts
        are never kept)."""
        if name == ftsparts.HEAD:
            return None, None
        stamp = self._stamps.get(name)
        if stamp is None:
            stamp = self._stamps[name] = ftsparts.totals(self.conn, name)
        kept = self._parts.get((phrase, name))
        return stamp, (kept[1] if kept is not None and kept[0] == stamp else None)

    def _keep(self, phrase, name, stamp, found):
        if len(self._parts) >= PART_COUNTS_KEPT:
            self._parts = {}
        self._parts[(phrase, name)] = (stamp, found)

    def _count(self, phrase, names):
        """Messages holding ``phrase`` in the tables ``names``, table by table: a phrase of one token from the
        table's vocabulary (FTS5's ``fts5vocab``, 'row': the same count, read from the token's list without a
        step per message; "error", in 360k of 1M messages: 34 ms against 157 ms matched), else matched.

        A sealed part's count is kept with the part's totals when counted (``_kept`` reads them): a part
        changes only by losing messages (a purge, a redaction moving one to the head), which changes its
        totals, so a kept count stands while they do (a part made again under a dropped part's name would
        have to have its very totals to be taken for it). A hook's turn writes to the head only: the first
        search after it counts the head again, not the 16 parts (at 1M about 5 ms of a full-text search)."""
        self._in_state(names)
        token = self._token(phrase)
        total = 0
        for name in names:
            stamp, kept = self._kept(phrase, name)
            if kept is not None:
                total += kept
                continue
            found = self._count_in(name, phrase, token)
            if stamp is not None:
                self._keep(phrase, name, stamp, found)
            total += found
        return total

    def _count_in(self, name, phrase, token):
        if token is not None:
            try:
                return self._documents(name, token)
            except apsw.Error:   # a table gone under its vocabulary: matched below, the vocabularies made again
                self._vocabularies = set()
        return self.conn.execute(f"SELECT count(*) FROM {name} WHERE {name} MATCH ?", (phrase,)).fetchall()[0][0]

    def _token(self, phrase):
        """The one token FTS5 reads a quoted phrase as, or None (no token, or more than one)."""
        if self._tokenizer is None:
            name, *args = ftsparts.TOKENIZE.split()
            self._tokenizer = self.conn.fts5_tokenizer(name, args)
        found = self._tokenizer(phrase[1:-1].replace('""', '"').encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
        return found[0][2] if len(found) == 1 and len(found[0]) == 3 else None

    def _documents(self, name, token):
        vocabulary = f"chats_vocabulary_{name}"   # ``name``: one of ``ftsparts.tables``, checked there
        if name not in self._vocabularies:
            self.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{vocabulary} USING fts5vocab(main, {name}, 'row')")
            self._vocabularies.add(name)
        found = self.conn.execute(f"SELECT doc FROM temp.{vocabulary} WHERE term = ?", (token,)).fetchall()
        return found[0][0] if found else 0

    def score(self, table):
        """The SQL expression ranking a row of ``table`` (lower is better, as ``rank``)."""
        if self.idf is None:
            return "rank"
        if self._lengths is None or not self._kept_lengths:   # none to read (a process's first ranking)
            return f"{self.function}({table})"
        if not self._kept_registered:   # (here: registering costs a fresh process ~0.4 ms)
            self.conn.register_fts5_function(f"{self.function}_kept", self._score_kept)
            self._kept_registered = True
        which = self._which.get(table, -1)
        if 0 <= which < len(self._kept_lengths) and self._kept_lengths[which] is _UNREAD:
            self._kept_lengths[which] = (None if table == ftsparts.HEAD else
                                         self._lengths.of(table, self._stamps[table]))
        return f"{self.function}_kept({table}, {which})"

    def _score(self, api):
        """Called for every match (2,000 a search at 1M): the same arithmetic as fts5_aux.c, in its order of
        operations, with what a call need not repeat taken out (``_ONE_MINUS_B``, ``_K1_PLUS_1``) and a
        phrase the row does not hold skipped (it adds 0.0); the row's length asked of FTS5."""
        return self._scored(api, api.column_size(-1))

    def _score_kept(self, api, which):
        """``_score`` with the row's length from the kept lengths of the table numbered ``which`` in
        ``prepare``'s names (``score`` read them): FTS5 is asked for a row outside them, or of a length they
        do not keep (0, ``ftslengths.LONG``)."""
        kept = self._kept_lengths[which] if 0 <= which < len(self._kept_lengths) else None
        size = 0
        if kept is not None:   # (``score`` read it before naming its number: never ``_UNREAD`` here)
            at = api.rowid - kept[0]
            if 0 <= at < len(kept[1]):
                size = kept[1][at]
        return self._scored(api, size if size and size != _LONG else api.column_size(-1))

    def _scored(self, api, size):
        idf = self.idf
        if idf is None or len(idf) != api.phrase_count:
            raise ValueError(f"{self.function}: {api.phrase_count} phrases in the query, {len(idf or ())} prepared")
        length = K1 * (_ONE_MINUS_B + B * size / self.avgdl)
        offsets = api.phrase_column_offsets
        score = 0.0
        for i, weight in enumerate(idf):
            freq = len(offsets(i, 0))
            if freq:
                score += weight * ((freq * _K1_PLUS_1) / (freq + length))
        return -score
