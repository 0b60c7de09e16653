"""The journal's side of search: an FTS5 (bm25) leg and a sqlite-vec leg.

``LocalSearch(journal)`` is the searcher's ``local`` backend (see
``claude_chats.search.core.Backend``). Each leg is one query; ``search.fuse``
combines them with Reciprocal Rank Fusion, exactly as Postgres does in SQL.

Full text: the query is read like Postgres' ``websearch_to_tsquery``
(words are ANDed, ``"quoted phrases"``, ``or`` between words, ``-word``
excludes, English stopwords dropped), or as any of its words (``match="any"``),
and written as a safe FTS5 expression: typed text is never parsed as FTS5
syntax. Messages are ranked by bm25 plus what the messages around them lend
(``search.NEIGHBOUR_WEIGHT``; Postgres computes the same in SQL).

Vectors: the chunk vectors of a space live in its index (``localstore.ivf``:
an inverted file in SQLite, read list by list, nothing loaded per process). KNN
takes the nearest chunks, filters, and keeps each message's best chunk; when the
filters leave too few, more lists are probed, and a small filtered set (a
session, a small project) is scored exactly. A journal of an older version whose
vectors are still in a sqlite-vec table is searched through sqlite-vec until
``chats sync`` has moved them.
"""

import json
import re
import threading
from dataclasses import replace
from datetime import timedelta

import numpy as np

from ..search.core import (
    FULLTEXT_POOL,
    MATCH_ROWS,
    NEIGHBOUR_SPAN,
    NEIGHBOUR_WEIGHT,
    SCORED_MATCHES,
    Candidate,
    any_words,
    fuse,
    selective,
)
from ..times import iso
from . import bm25, counts, db, fts, ftsparts, ivf, ivfscan, stamps, vectors
from .fts import fts_match
from .journal import Journal

KNN_MAX = 4096          # sqlite-vec's limit on k (legacy tables)
EXACT_MAX = 20_000      # a filter that leaves at most this many chunks is scored exactly
WIDEN = (1, 2, 8, 32)   # lists probed, as multiples of the default, while a filter leaves too few
PRESELECT_BATCH = 64    # chunks the vector leg looks up first (``_preselected``)
_VEC_COLUMN = re.compile(r"(\w+)\s+float\[(\d+)\]", re.IGNORECASE)
_METRIC = re.compile(r"distance_metric\s*=\s*(\w+)", re.IGNORECASE)


class LocalSearch:
    """Search and read the journal; ``source`` is ``"local"``."""

    source = "local"

    def __init__(self, journal, match_rows=MATCH_ROWS, scored_matches=SCORED_MATCHES):
        self.journal, self.conn = journal, journal.conn
        self.match_rows, self.scored_matches = match_rows, scored_matches
        self._ranker = bm25.Ranker(self.conn, lengths=True)
        self._vec_loaded = False
        self._vec_tables = {}
        self._readers = {}
        self._helper = self._helper_failed = None   # the vector leg's connection (``_helper_search``)
        self._schema = self._narrow = None   # the schema's version, and whether it has the filters' index

    @classmethod
    def open(cls, path=None):
        return cls(Journal.open(path))

    def close(self):
        if self._helper is not None:
            self._helper.close()
            self._helper = None
        self.journal.close()

    # -- spaces ---------------------------------------------------------------------------

    def space(self, key):
        rows = self._spaces("WHERE key = ?", (key,))
        return rows[0] if rows else None

    def spaces(self):
        """Spaces that hold vectors."""
        return [s for s in self._spaces("", ()) if s["vectors"]]

    def _spaces(self, where, args):
        rows = self.conn.execute(
            f"SELECT id, key, provider, model, dimensions, options, canary, "
            f"EXISTS (SELECT 1 FROM chunks c WHERE c.space_id = spaces.id) FROM spaces {where} ORDER BY id",
            args).fetchall()
        names = ("id", "key", "provider", "model", "dimensions", "options", "canary", "vectors")
        out = [dict(zip(names, row)) for row in rows]
        for s in out:
            s["options"] = json.loads(s["options"] or "{}")
            s["canary"] = np.frombuffer(s["canary"], dtype=np.float32) if s["canary"] else None
            s["vectors"] = bool(s["vectors"])
        return out

    def coverage(self, space_id, skipped=()):
        """(messages with vectors of the space, messages it embeds: not a fork's copy, not of the kinds
        ``skipped``), from the journal's counters (``localstore.counts``)."""
        return counts.coverage(self.conn, space_id, skipped)

    def warm(self, key):
        """Read the index's centroids of space ``key`` now rather than on the first search (cheap)."""
        row = self.space(key)
        if row is not None and row["vectors"]:
            reader = self._reader(row["id"])
            if reader is not None:
                reader.refresh(self._version())

    # -- the legs ---------------------------------------------------------------------------

    def candidates(self, plan):
        """Each leg reads one state of the journal (``db.Snapshot``): a seal of the full-text index
        committed meanwhile (a rename) must not hide a part between reading the tables and asking them.

        Hybrid: the vector leg runs on a second connection (``_helper``) in a thread while the full-text
        leg runs here, as ``PgSearch`` does: on two cores the search takes the longer leg, not their
        sum (at 1M messages 35 ms of full text and 28 ms of vectors, one after the other, the query's
        embedding waited for between them). The legs may see two states a commit apart; what they find
        is read again by ``hydrate``, which leaves out what is gone."""
        if "fulltext" in plan.legs and "semantic" in plan.legs:
            helper = self._helper_search()
            if helper is not None:
                return self._apart(plan, helper)
        legs = {}
        with db.Snapshot(self.conn):
            if "fulltext" in plan.legs:
                legs["fulltext"] = self.fulltext(plan)
            if "semantic" in plan.legs:
                legs["semantic"] = self.semantic(plan)
        return fuse(legs, plan.rrf_k, plan.weights)

    def _apart(self, plan, helper):
        """The vector leg on ``helper`` in a thread, the full-text leg here, then their fusion (the legs
        in the order the one-connection path runs them). A failure of either is raised as it would be
        there: the full-text leg's first.

        When both connections read one state (``db.Twin``), this thread, its full-text leg done (before
        the query's embedding, most often), reads some of the vector leg's lists on its connection
        (``ivfscan.Partner``): at 1M messages the scan of ~45,000 vectors is two threads' work."""
        found, failed = {}, {}
        partner = ivfscan.Partner()

        def vector_leg(same):
            try:   # (in the read transaction ``Twin`` began on ``helper.conn``)
                found["semantic"] = helper.semantic(plan, partner if same else None)
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                failed["semantic"] = exc
            finally:
                partner.close()

        with db.Twin(self.conn, helper.conn) as same:
            worker = threading.Thread(target=vector_leg, args=(same,), name="chats-vector-leg", daemon=True)
            worker.start()
            try:
                found["fulltext"] = self.fulltext(plan)
                if same:
                    partner.lend(self.conn)
            finally:
                worker.join()
        if "semantic" in failed:
            raise failed["semantic"]
        return fuse({"fulltext": found["fulltext"], "semantic": found["semantic"]}, plan.rrf_k, plan.weights)

    def _helper_search(self):
        """A ``LocalSearch`` on a second connection to this journal, opened on the first hybrid search
        (None for a journal without a file: an in-memory one, or when it cannot be opened: the legs
        then run one after the other here)."""
        if self._helper is None and self._helper_failed is None:
            path = getattr(self.journal, "path", None)
            if not path or path == ":memory:":
                self._helper_failed = "no file"
                return None
            try:
                self._helper = LocalSearch(Journal.open(path), self.match_rows, self.scored_matches)
            except Exception as exc:  # noqa: BLE001 - apsw's errors: the one connection does both legs
                self._helper_failed = str(exc)
        return self._helper

    def fulltext(self, plan):
        """Messages by bm25 plus what their neighbours lend (at most ``plan.candidates``), best first.

        The top ``FULLTEXT_POOL`` x candidates matches lend ``plan.neighbours`` x their score to the
        messages within ``NEIGHBOUR_SPAN`` of them. A neighbour lends whatever its role or
        time: the filters choose what is ranked, not what is read.
        """
        match = self._any_match(plan.text) if plan.match == "any" else fts_match(plan.text)
        if match is None:
            return []
        if not plan.neighbours:
            return [Candidate(i, session, scores={"fulltext": score})
                    for i, session, _seq, score in self._ranked(match, plan.filters, plan.candidates)]
        lenders = self._ranked(match, replace(plan.filters, role=None, since=None, until=None),
                               plan.candidates * FULLTEXT_POOL)
        if not lenders:
            return []
        matched = {(session, seq): score for _i, session, seq, score in lenders}
        if plan.filters.role is None and plan.filters.since is None and plan.filters.until is None:
            places = self._may_rank(lenders, matched, plan)
        else:   # a lender need not pass the filters: every place around them is looked up
            places = self._around(_spans(matched), plan.filters)
        scored = with_neighbours(matched, places, NEIGHBOUR_SPAN, plan.neighbours)
        # ties by place, as in Postgres (as float32: sums differ in their last bits between the stores)
        rounded = np.asarray(list(scored.values()), dtype=np.float32).tolist()
        ranked = sorted(zip(rounded, scored.items()), key=lambda item: (-item[0], item[1][0]))[:plan.candidates]
        return [Candidate(places[place], place[0], scores={"fulltext": score}) for _, (place, score) in ranked]

    def _any_match(self, text):
        """``fts_match(text, "any")``, over the words ``search.selective`` keeps at this store's size."""
        words, joiner = any_words(text), " OR "
        if len(words) > 1:
            # counted up to what ``selective`` looks at (it caps them there): a common word's every
            # match counted took ~0.1 s at a million messages
            names = ftsparts.tables(self.conn)
            matches = [self._ranker.matches(fts.quote(w), names, self.match_rows + 1) for w in words]
            # below the cap a count read every table: the ranker's statistics need no second count
            self._ranker.counted({fts.quote(w): m for w, m in zip(words, matches) if m <= self.match_rows}, names)
            if sum(matches) > self.match_rows:
                total = counts.messages(self.conn)[0]
                words, match = selective(words, matches, total, self.match_rows)
                joiner = " OR " if match == "any" else " AND "
        return joiner.join(fts.quote(w) for w in words) or None

    def _ranked(self, match, filters, limit):
        """(id, session, seq, bm25 score) of the best ``limit`` matches that pass ``filters``, among the
        newest ``scored_matches`` that pass them (messages' ids follow the order they were recorded; the
        index's tables are read newest first, ``ftsparts.tables``).

        Every scored match is ranked and then filtered, in one statement: FTS5 ranks every match of the
        cut whether a top of them is asked or not, so an oversampled top first (4 x ``limit``, 64 x under a
        filter) cost as much at 1M messages and 100k (241 against 244 ms over 41 queries; 140 against
        142) and, when too few of it passed a filter, a second statement over every match as well (a
        project's hybrid search, 2 x 16 ms).
        """
        where, args = _filters(filters)
        unfiltered = _only_kinds(filters) and not filters.session_id
        cut = self._cut(match, where, args, unfiltered)
        rows = self._fulltext(match, where, args, limit, cut, filtered=not unfiltered)
        return [(i, session, seq, -rank) for i, session, seq, rank in rows]

    def _cut(self, match, where, args, unfiltered):
        """[(table, lowest id ranked in it)] of the index's tables full text ranks, newest first: those
        holding the ``scored_matches`` newest matches that pass the filters, but never more than 8 x
        ``scored_matches`` matches back (a narrow filter of a common word)."""
        newest, reached = self._newest(match, self.scored_matches * (1 if unfiltered else 8))
        if unfiltered or not reached:
            return newest
        cut, missing = [], self.scored_matches
        joins, where = self._messages(where, "f.rowid")
        for table, floor in newest:
            rows = self.conn.execute(
                f"SELECT f.rowid FROM {table} f JOIN {joins} WHERE {table} MATCH ? AND f.rowid >= ? AND {where} "
                f"ORDER BY f.rowid DESC LIMIT ?", (match, floor, *args, missing)).fetchall()
            if len(rows) == missing:
                return cut + [(table, rows[-1][0])]
            cut.append((table, floor))
            missing -= len(rows)
        return newest

    def _newest(self, match, n):
        """[(table, lowest id)] holding the ``n`` newest matches of ``match``, newest table first, and
        whether there were ``n`` (else every table that holds a match, whole). Fewer than ``n`` matches by
        their words' counts (an any-word search's rarest words are at most ``MATCH_ROWS``): every table,
        whole, without counting each one's matches (a fifth of a full-text search over 17 tables)."""
        names = ftsparts.tables(self.conn)
        most = self._ranker.most(match, names)
        if most is not None and most < n:
            return ([(table, 0) for table in names] if most else []), False
        cut = []
        for table in names:
            found = self.conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? "
                                      f"LIMIT ?)", (match, n)).fetchall()[0][0]
            if found < n:
                if found:
                    cut.append((table, 0))
                n -= found
                continue
            floor = self.conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC "
                                      f"LIMIT 1 OFFSET ?", (match, n - 1)).fetchall()[0][0]
            return cut + [(table, floor)], True
        return cut, False

    def _fulltext(self, match, where, args, limit, cut, filtered=False):
        """The best ``limit`` of the matches in ``cut`` that pass the filters, ranked by each table's FTS5
        (``ORDER BY rank``; ``LIMIT -1`` keeps SQLite from dropping a subquery's ORDER BY: the same rows
        ranked unsorted and then joined took 949 against 650 ms over 49 searches at 1M).

        ``filtered`` (a project, a role, dates: most matches fail): each table's matches are joined to
        their messages and filtered before they are ranked, so only those that pass are. Ranked first
        and filtered after, a project's search of five common words at 1M ranked the ~16,000 matches of
        its cut to keep a few hundred (63 ms); the scores are the same either way (the statistics are
        every table's, ``Ranker.prepare``; a match's own is its own)."""
        if not cut:
            return []
        self._ranker.prepare(match, ftsparts.tables(self.conn))   # every table's statistics, as one table's
        if filtered:
            statements = []
            for table, _floor in cut:
                joins, said = self._messages(where, f"{table}.rowid")
                statements.append(
                    f"SELECT * FROM (SELECT m.id, n.session_id, m.seq, {self._ranker.score(table)} AS rank FROM {table} "
                    f"JOIN {joins} WHERE {table} MATCH ? AND {table}.rowid >= ? AND {said} ORDER BY rank LIMIT -1)")
            inner = " UNION ALL ".join(statements)
            parts = [x for _table, floor in cut for x in (match, floor, *args)]
            return self.conn.execute(f"SELECT * FROM ({inner}) ORDER BY rank, id LIMIT ?", (*parts, limit)).fetchall()
        inner = " UNION ALL ".join(
            f"SELECT * FROM (SELECT rowid, {self._ranker.score(table)} AS rank FROM {table} WHERE {table} MATCH ? "
            f"AND rowid >= ? ORDER BY rank LIMIT -1)" for table, _ in cut)
        joins, where = self._messages(where, "f.rowid")
        sql = (f"SELECT m.id, n.session_id, m.seq, f.rank FROM ({inner} ORDER BY rank LIMIT -1) f "
               f"JOIN {joins} WHERE {where} ORDER BY f.rank, m.id LIMIT ?")
        parts = [x for _table, floor in cut for x in (match, floor)]
        return self.conn.execute(sql, (*parts, *args, limit)).fetchall()

    def _may_rank(self, lenders, matched, plan):
        """``_around``'s answer for the places that can be among the best ``plan.candidates``, when the lenders
        pass ``plan.filters`` (they were found with them, no role or time asked).

        A lender's score with what its neighbours lend is known without reading anything; a place that
        lends nothing scores at most what the lenders around it lend, as if it passed the filters. Only
        those whose most reaches the lenders' ``candidates``-th best score (less a float32 step: the ranking
        rounds) are looked up: tens of messages rather than the ~1,000 around 200 lenders (3.4 of a
        warm full-text leg's 15 ms at 1M). What ranks is what looking every place up ranks (test)."""
        known = {(session, seq): i for i, session, seq, _score in lenders}
        around = {(session, seq + d) for session, seq in matched for d in range(-NEIGHBOUR_SPAN, NEIGHBOUR_SPAN + 1)}
        most = with_neighbours(matched, around, NEIGHBOUR_SPAN, plan.neighbours)
        own = sorted((most[place] for place in known if place in most), reverse=True)
        if len(own) < plan.candidates:
            return self._around(_spans(matched), plan.filters)
        bar = own[plan.candidates - 1]
        bar -= abs(bar) * 1e-6
        maybe = sorted(place for place, score in most.items() if place not in known and score >= bar)
        found = self._around(_spans(maybe, 0), plan.filters) if maybe else {}
        return {**known, **found}

    def _around(self, ranges, filters):
        """{(session, seq): message id} of the messages in ``ranges`` (``_spans``) that pass ``filters``."""
        where, args = _filters(filters)
        rows = self.conn.execute(
            f"SELECT n.session_id, m.seq, m.id FROM json_each(?) r JOIN session_numbers n ON n.session_id = r.value ->> 0 "
            f"JOIN messages m ON m.session = n.number AND m.seq BETWEEN r.value ->> 1 AND r.value ->> 2 "
            f"JOIN sessions s ON s.id = n.session_id WHERE {where}", (json.dumps(ranges), *args)).fetchall()
        return {(session, seq): i for session, seq, i in rows}

    def semantic(self, plan, partner=None):
        """Messages by their nearest chunk to ``plan.vector`` (cosine similarity, best first). ``partner``:
        an ``ivfscan.Partner`` lending a thread to the index's scans."""
        plan = replace(plan, vector=plan.query_vector())   # waited for here, after the full-text leg
        where, args = _filters(plan.filters)
        reader = self._reader(plan.space_id)
        if reader is None:
            if not vectors.legacy(self.conn, plan.space_id):
                return []   # the index is gone: ``chats sync`` embeds again (``vectors.repair``)
            return self._legacy_semantic(plan, where, args)
        if plan.filters.session_id is None:
            unfiltered = _only_kinds(plan.filters)
            knn = plan.candidates * (4 if unfiltered else 16)
            for widen in WIDEN:
                if unfiltered:   # nearly every chunk passes: the best are looked up first, a few at a time
                    ids, similarities = reader.nearest(plan.vector, knn, self._version(), widen, partner=partner)
                    found = self._preselected(ids, similarities, where, args, plan.candidates)
                else:            # most fail: looked up before their fine codes are read, all at once
                    kept = {}
                    ids, similarities = reader.nearest(plan.vector, knn, self._version(), widen,
                                                       keep=self._passing(where, args, kept), partner=partner)
                    found = _one_per_message(ids.tolist(), similarities.tolist(), kept, set(), [], plan.candidates)
                if len(found) >= plan.candidates or (reader.whole and reader.live < knn):
                    return _candidates(found)
                if widen == WIDEN[0] and self._chunks_within(plan.space_id, where, args, EXACT_MAX,
                                                             bool(plan.filters.project_path)):
                    break   # few enough to score exactly
                knn *= 4
        return _candidates(self._exact_index(plan, where, args))

    def _filtered_chunks(self, space_id, where, args, by_session=False):
        """(chunk id, message id, session id, start, end) of the space's chunks the filters leave."""
        sql = (f"SELECT c.id, c.message_id, n.session_id, c.start_char, c.end_char FROM "
               f"{_chunks_filtered(by_session)} WHERE {where}")
        return self.conn.execute(sql, (space_id, *args)).fetchall()

    def _chunks_within(self, space_id, where, args, most, by_session=False):
        """Whether the filters leave at most ``most`` chunks of the space: counted up to one more, in
        SQLite (the rows themselves made Python tuples took 26-34 ms at 1M messages for a project and a
        date range leaving 57,000-140,000 chunks, against 13-22 ms counted)."""
        sql = f"SELECT count(*) FROM (SELECT 1 FROM {_chunks_filtered(by_session)} WHERE {where} LIMIT ?)"
        return self.conn.execute(sql, (space_id, *args, most + 1)).fetchall()[0][0] <= most

    def _exact_index(self, plan, where, args):
        """Rows like ``_knn``'s: every chunk the filters leave, scored exactly, best per message."""
        rows = self._filtered_chunks(plan.space_id, where, args, by_session=bool(plan.filters.project_path))
        found = ivf.vectors_of(self.conn, plan.space_id, [r[0] for r in rows])
        q = np.asarray(plan.vector, np.float32)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        best = {}
        for chunk_id, message_id, session, start, end in rows:
            vector = found.get(chunk_id)
            if vector is None:
                continue
            sim = float(np.dot(vector, q))
            if message_id not in best or sim > best[message_id][2]:
                best[message_id] = (message_id, session, sim, start, end)
        ranked = sorted(best.values(), key=lambda r: (-r[2], r[0]))
        return ranked[:plan.candidates]

    def _legacy_semantic(self, plan, where, args):
        table, column, metric = self._vec_table(plan.space_id)
        if plan.filters.session_id is None:
            knn = min(KNN_MAX, plan.candidates * (4 if _only_kinds(plan.filters) else 16))
            found = self._knn(table, column, metric, plan.vector, knn, where, args, plan.candidates)
            if len(found) >= plan.candidates:
                return _candidates(found)
        return _candidates(self._exact(table, column, metric, plan.vector, plan.space_id, where, args,
                                       plan.candidates))

    def _knn(self, table, column, metric, vector, knn, where, args, limit):
        sql = (f"WITH knn AS (SELECT rowid, distance FROM {table} WHERE {column} MATCH ? AND k = ?) "
               f"SELECT c.message_id, n.session_id, {_similarity(metric, 'min(knn.distance)')} AS sim, "
               f"c.start_char, c.end_char FROM knn JOIN chunks c ON c.id = knn.rowid "
               f"JOIN messages m ON m.id = c.message_id {db.SESSION_OF} WHERE {where} "
               f"GROUP BY c.message_id ORDER BY sim DESC, c.message_id LIMIT ?")
        return self.conn.execute(sql, (_blob(vector), knn, *args, limit)).fetchall()

    def _preselected(self, ids, similarities, where, args, limit):
        """Rows like ``_knn``'s for chunks the index found (best first), filtered, one per message.

        The chunks are looked up best first, a batch at a time (``PRESELECT_BATCH``, then twice as many
        each time), until ``limit`` messages pass: an unfiltered search keeps 40 messages of the 640 chunks
        found after reading the first 64, not all 640 (three B-tree look-ups each; at 1M messages 1.2
        against 2.2 ms a warm search). The rows are those of reading every chunk at once: each chunk's
        look-up does not depend on the others."""
        ids, similarities = ids.tolist(), similarities.tolist()
        rows, seen, start, batch = [], set(), 0, PRESELECT_BATCH
        while start < len(ids) and len(rows) < limit:
            chunk_ids = ids[start:start + batch]
            kept = dict(self._passing_rows(chunk_ids, where, args))
            _one_per_message(chunk_ids, similarities[start:start + batch], kept, seen, rows, limit)
            start, batch = start + batch, batch * 2
        return rows

    def _passing_rows(self, chunk_ids, where, args):
        """(chunk id, (message id, session id, start, end)) of the chunks ``chunk_ids`` the filters keep."""
        joins, where = self._messages(where, "c.message_id")
        sql = (f"SELECT c.id, c.message_id, n.session_id, c.start_char, c.end_char FROM chunks c "
               f"JOIN {joins} WHERE c.id IN (SELECT value FROM json_each(?)) AND {where}")
        return ((row[0], row[1:]) for row in self.conn.execute(sql, (json.dumps(chunk_ids), *args)))

    def _passing(self, where, args, kept):
        """``Reader.nearest``'s ``keep``: which chunks the filters keep, their rows put in ``kept``."""
        def keep(chunk_ids):
            chunk_ids = chunk_ids.tolist()
            kept.update(self._passing_rows(chunk_ids, where, args))
            return [chunk_id in kept for chunk_id in chunk_ids]
        return keep

    def _exact(self, table, column, metric, vector, space_id, where, args, limit):
        distance = "vec_distance_cosine" if metric == "cosine" else "vec_distance_l2"
        sql = (f"SELECT c.message_id, n.session_id, {_similarity(metric, f'min({distance}(v.{column}, ?))')} AS sim, "
               f"c.start_char, c.end_char FROM messages m {db.SESSION_OF} "
               f"JOIN chunks c ON c.message_id = m.id AND c.space_id = ? JOIN {table} v ON v.rowid = c.id "
               f"WHERE {where} GROUP BY c.message_id ORDER BY sim DESC, c.message_id LIMIT ?")
        return self.conn.execute(sql, (_blob(vector), space_id, *args, limit)).fetchall()

    def _messages(self, where, message_id):
        """``(joins, where)`` for a statement that looks messages up by id (``message_id``, an expression of
        the tables before) only to filter and place them: ``messages m`` joined on it, then its session
        (``n``, ``s``), and ``where`` as the statement must say it.

        ``m`` is read through the narrow index of its filter columns (``db.FILTERS_INDEX``) when the journal
        has it: SQLite would look each rowid up in the table, 20 wide rows to a 16 KB page against ~600
        entries of the index. When ``where`` also names a column the index lacks (a role, a time), those
        rows are read from the table (``mt``, joined last, so only for the rows the rest of ``where``
        keeps) if a project or a session narrows them first; else the table alone, as before (every row
        would be read twice)."""
        columns = set(_M_COLUMN.findall(where))
        if not self._has_filters_index() or (columns - db.FILTERS_COLUMNS and not _NARROWING.search(where)):
            return f"messages m ON m.id = {message_id} {db.SESSION_OF}", where
        joins = f"messages m INDEXED BY {db.FILTERS_INDEX} ON m.id = {message_id} {db.SESSION_OF}"
        if columns <= db.FILTERS_COLUMNS:
            return joins, where
        where = _M_COLUMN.sub(lambda c: ("m." if c.group(1) in db.FILTERS_COLUMNS else "mt.") + c.group(1), where)
        return f"{joins} CROSS JOIN messages mt ON mt.id = m.id", where   # (CROSS: SQLite keeps it last)

    def _has_filters_index(self):
        """Whether the journal has the filters' index, asked again when its schema changed (an index dropped
        by hand under a running server: its searches read the table, not fail)."""
        schema = self.conn.execute("PRAGMA schema_version").fetchall()[0][0]
        if schema != self._schema:
            self._schema, self._narrow = schema, db.has_filters_index(self.conn)
        return self._narrow

    def _version(self):
        # data_version moves when another connection commits; total_changes when this one writes
        return self.conn.execute("PRAGMA data_version").fetchall()[0][0], self.conn.total_changes()

    def _reader(self, space_id):
        """The space's index reader, or None while its vectors are in a legacy sqlite-vec table."""
        version = self._version()
        cached = self._readers.get(space_id)
        if cached is None or cached[0] != version:
            reader = ivf.Reader(self.conn, space_id) if ivf.ready(self.conn, space_id) else None
            if cached is not None and cached[1] is not None and reader is not None:
                reader = cached[1]   # keeps its centroids until they change (``Reader.refresh``)
            cached = self._readers[space_id] = (version, reader)
        return cached[1]

    def _vec_table(self, space_id):
        """(table, vector column, metric) of a space's sqlite-vec table, the extension loaded."""
        if space_id not in self._vec_tables:
            self._load_vec()
            table = f"vec_{int(space_id)}"
            rows = self.conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchall()
            sql = rows[0][0] if rows else ""
            column = _VEC_COLUMN.search(sql)
            metric = _METRIC.search(sql)
            self._vec_tables[space_id] = (table, column.group(1) if column else "embedding",
                                          metric.group(1).lower() if metric else "l2")
        return self._vec_tables[space_id]

    def _load_vec(self):
        if not self._vec_loaded:
            vectors.load_extension(self.conn)
            self._vec_loaded = True

    # -- hits -----------------------------------------------------------------------------

    def hydrate(self, keys):
        if not keys:
            return {}
        rows = self.conn.execute(
            f"SELECT m.id, {_HIT_COLUMNS} FROM messages m {db.SESSION_OF} "
            "WHERE m.id IN (SELECT value FROM json_each(?))", (json.dumps(list(keys)),)).fetchall()
        return {row[0]: dict(zip(_HIT_NAMES, row[1:])) for row in rows}

    def neighbours(self, places, span):
        return {(session, seq): self.journal.neighbours(session, seq, span) for session, seq in places}

    # -- conversations ------------------------------------------------------------------------

    def session(self, session_id):
        return _session(self.journal.session(session_id))

    def messages(self, session_id, start, end, kinds, limit):
        sql = (f"SELECT seq, role, kind, chats_time(created_at), chats_text(content) FROM messages "
               f"WHERE session = {db.NUMBER} AND seq >= ? "
               f"AND seq <= ? AND kind IN ({','.join('?' * len(kinds))}) ORDER BY seq LIMIT ?")
        rows = self.conn.execute(sql, (session_id, start, 1 << 62 if end is None else end, *kinds, limit))
        return [dict(zip(("seq", "role", "kind", "timestamp", "content"), row)) for row in rows]

    def sessions(self, limit, project_path, include_subagents, origin="human"):
        return [_session(s) for s in self.journal.sessions(limit, project_path, include_subagents, origin)]

    def subagents(self, session_id):
        return [_session(s) for s in self.journal.subagents(session_id)]


_HIT_NAMES = ("session_id", "session_name", "project_path", "git_branch", "role", "kind", "seq", "timestamp",
              "uuid", "content", "is_subagent")
_HIT_COLUMNS = (f"n.session_id, {db.session_name()}, s.project_path, s.git_branch, "
                "m.role, m.kind, m.seq, chats_time(m.created_at), chats_uuid(m.uuid), chats_text(m.content), "
                "s.agent_id IS NOT NULL")


def _session(row):
    return {"session_id": row["session_id"], "name": row["name"], "project_path": row["project_path"],
            "git_branch": row["git_branch"], "started_at": row["first_at"], "last_at": row["last_at"],
            "message_count": row["message_count"], "machine": row["machine"],
            "parent_session_id": row["parent_session_id"], "is_subagent": row["agent_id"] is not None,
            "entrypoint": row["entrypoint"], "machine_made": bool(row["machine_made"])}


def _spans(places, span=NEIGHBOUR_SPAN):
    """[session, first seq, last seq] ranges covering ``span`` either side of each (session, seq), overlapping
    and touching ones merged: one index range each."""
    ranges = []
    for session, seq in sorted(places):
        if ranges and ranges[-1][0] == session and seq - span <= ranges[-1][2] + 1:
            ranges[-1][2] = seq + span
        else:
            ranges.append([session, seq - span, seq + span])
    return ranges


def with_neighbours(matched, places, span=NEIGHBOUR_SPAN, weight=NEIGHBOUR_WEIGHT):
    """Scores with context: ``matched`` is {(session, seq): score} of the full-text matches,
    ``places`` the (session, seq) of every message that may be ranked; each gets its own
    score plus ``weight`` x the sum of the scores within ``span`` of it in its session."""
    places = set(places)
    out = {place: score for place, score in matched.items() if place in places}
    for (session, seq), score in matched.items():
        for d in range(-span, span + 1):
            place = (session, seq + d)
            if d and place in places:
                out[place] = out.get(place, 0.0) + weight * score
    return {place: total for place, total in out.items() if total > 0}


def _one_per_message(chunk_ids, similarities, kept, seen, rows, limit):
    """``rows`` (as ``_knn``'s) extended by the chunks ``chunk_ids`` (best first) that ``kept`` holds
    (chunk id -> message id, session id, start, end), a message's best chunk only (``seen``: the messages
    already in ``rows``), until ``limit`` rows."""
    for chunk_id, similarity in zip(chunk_ids, similarities):
        found = kept.get(chunk_id)
        if found is None or found[0] in seen:
            continue
        seen.add(found[0])
        rows.append((found[0], found[1], similarity, found[2], found[3]))
        if len(rows) == limit:
            break
    return rows


def _chunks_filtered(by_session):
    """The FROM clause of a space's chunks (``?``: the space's id) with their messages ``m``, session numbers
    ``n`` and sessions ``s``, for a filter's WHERE.

    ``by_session`` (a project filter): read from the sessions it leaves, then their messages, then their
    chunks. Left to itself the planner walks every chunk of the space and looks each one's message and
    session up (the project filter, a prefix by ``substr``, names no index): 0.86-0.99 s at 1M messages
    for a project and a date range, 33 ms read from the sessions."""
    tables = ("sessions s CROSS JOIN session_numbers n ON n.session_id = s.id CROSS JOIN messages m "
              "ON m.session = n.number CROSS JOIN chunks c" if by_session
              else f"messages m {db.SESSION_OF} JOIN chunks c")
    return f"{tables} ON c.message_id = m.id AND c.space_id = ?"


def _candidates(rows):
    return [Candidate(i, session, scores={"semantic": sim}, chunk=(start, end)) for i, session, sim, start, end in rows]


def _similarity(metric, distance):
    """Cosine similarity from a sqlite-vec distance (L2 between unit vectors: 1 - d^2 / 2)."""
    return f"(1.0 - {distance})" if metric == "cosine" else f"(1.0 - {distance} * {distance} / 2.0)"


def _blob(vector):
    return vector.astype("float32").tobytes()


def _only_kinds(filters):
    # origin "human" (the default) keeps nearly every message: it needs no oversampling of its own
    return not (filters.project_path or filters.role or filters.since or filters.until
                or not filters.include_subagents or filters.origin == "machine")


_M_COLUMN = re.compile(r"\bm\.(\w+)")   # a column of ``messages m`` a statement names
_NARROWING = re.compile(r"\bs\.project_path\b|\bm\.session = ")   # ``_filters``' project and session

# A message's time as milliseconds since the epoch, comparable as numbers: Claude Code's own form
# (``2026-01-01T07:00:00.000Z``) is stored so (``stamps``: journal migration 0015) and taken as it is;
# the times transcripts write with their own offset (``12:00:00.000+05:00``) or none at all stay text,
# made UTC by strftime (always four digits of year and three of milliseconds, so ``stamps.pack`` takes it).
UTC_CREATED = ("(CASE WHEN typeof(m.created_at) = 'integer' THEN m.created_at "
               "ELSE chats_pack_time(strftime('%Y-%m-%dT%H:%M:%fZ', m.created_at)) END)")


def _bound(moment):
    """A ``since``/``until`` bound as the journal's UTC text, rounded up to the millisecond the journal
    keeps (so that ``>=`` and ``<`` select what Postgres selects with microseconds)."""
    if moment is None:
        return None
    extra = moment.microsecond % 1000
    if extra:
        try:
            moment += timedelta(microseconds=1000 - extra)
        except OverflowError:   # the last representable instant: nothing comes after it
            pass
    return iso(moment)


def _filters(filters):
    """SQL conditions over messages ``m`` and sessions ``s`` for a ``search.Filters``."""
    where = [f"m.kind IN ({','.join('?' * len(filters.kinds))})", "m.copy = 0"]   # a fork's copies: found once
    args = list(filters.kinds)
    if filters.project_path:
        prefix = filters.project_path if filters.project_path.endswith("/") else filters.project_path + "/"
        where.append("(s.project_path = ? OR substr(s.project_path, 1, ?) = ?)")
        args += [filters.project_path, len(prefix), prefix]
    for condition, value in ((f"m.session = {db.NUMBER}", filters.session_id), ("m.role = ?", filters.role),
                             (f"{UTC_CREATED} >= ?", stamps.pack(_bound(filters.since))),
                             (f"{UTC_CREATED} < ?", stamps.pack(_bound(filters.until)))):
        if value is not None:
            where.append(condition)
            args.append(value)
    if not filters.include_subagents:
        where.append("s.agent_id IS NULL")
    if filters.origin != "any":
        where.append(ORIGIN_SQL[filters.origin])
    return " AND ".join(where), args


ORIGIN_SQL = {"human": "s.machine_made = 0", "machine": "s.machine_made = 1"}


__all__ = ["LocalSearch", "with_neighbours"]
