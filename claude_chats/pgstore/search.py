"""Postgres' side of search: both legs and their Reciprocal Rank Fusion in one SQL statement.

``PgSearch(conn)`` is the searcher's ``postgres`` backend (see
``claude_chats.search.core.Backend``): full text with the journal's reading of web-search
syntax (``search.web_query``: all words) or any of the query's words, vectors with pgvector (``<=>``, cosine) over
the space's ``vectors_<id>`` table, fused in SQL the pgvector-python way, as the
journal does it (weighted RRF, neighbours lending their full-text score).

Full text is ranked like the journal's FTS5 bm25, so that both stores agree:
``ts_rank`` has no term rarity (IDF), and once a question matches on any of its
words, "go" and "Caroline" must not weigh the same. Per query word, one round
trip before the search statement: its document frequency (``_TERMS``: ANALYZE's
lexeme statistics for a common word, else counted through the GIN index), and
so which words an any-word query matches on (``search.core.selective``, as the
journal chooses). Per message: its term frequencies (``ts_rank_cd`` of each word
alone counts its occurrences) and its length in words as FTS5 counts them
(``content_words``, stored by sync); the message count and mean length are
cached (``_text_stats``). See ``_BM25_TERM``. The tsvector splits text at
punctuation as FTS5 does (sql/0003_fulltext_words.sql), and both stores drop the
same stop words, so that both rank a query's messages alike.

``PgLink`` keeps the connection of a long-lived searcher (the MCP server):
it connects in the background, makes a caller wait at most ``wait`` seconds,
and after losing the connection lets the searcher answer from the journal at
once, trying Postgres again ``retry_after`` seconds later.
"""

import math
import threading
import time
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import psycopg

from .. import transcript
from ..errors import ClaudeChatsError, PostgresUnavailable, SessionNotFound
from ..search.core import (
    FULLTEXT_POOL,
    MATCH_ROWS,
    NEIGHBOUR_READ,
    NEIGHBOUR_SPAN,
    SCORED_MATCHES,
    Candidate,
    any_words,
    fuse,
    selective,
    shorten,
    web_query,
)
from . import connect as pg
from . import store
from . import url as dburl

STATEMENT_TIMEOUT_MS = 10_000
HELPER_CONNECT_TIMEOUT = 2   # seconds: the second connection of a hybrid search (see PgSearch.candidates)
HELPER_RETRY = 60            # seconds before trying to open it again after it could not be opened or broke
SPACES_TTL = 30          # seconds
STATS_TTL = 300          # seconds: the message count and mean length, for bm25
# HNSW candidates a vector search keeps (hnsw.ef_search): at 100k real-shaped vectors recall@10 of the
# vector leg against exact was 0.83 at 100 and 0.91 at 400, at no measurable cost (bench_pg_scale.py)
EF_SEARCH_MIN = 400
BM25_K1, BM25_B = 1.2, 0.75   # FTS5's
# work_mem of a searcher's session: enough for an exact bitmap of every page of ``messages`` (a full-text
# match of common words is one; past work_mem it turns lossy and every row of a lossy page is checked
# again: at a million messages and the default 4 MB, an identifier such as "parse_config", a phrase of two
# common words, checked 380,386 rows where 124,671 were candidates, 3.0 s against 2.0). About 100 bytes a
# page were used; at least SEARCH_WORK_MEM_MIN_MB, at most SEARCH_WORK_MEM_MAX_MB, and never below what
# the server or the role configured.
SEARCH_BITMAP_BYTES_PER_PAGE = 128
SEARCH_WORK_MEM_MIN_MB = 8
SEARCH_WORK_MEM_MAX_MB = 64
# The setting (relpages: as of the table's last VACUUM or ANALYZE; -1 before the first, 0 for an empty table)
_WORK_MEM = """
SELECT set_config('work_mem', (greatest(
    pg_size_bytes(current_setting('work_mem')),
    least(%(most)s::bigint, greatest(%(least)s::bigint, %(per_page)s::bigint * greatest(
        coalesce((SELECT relpages FROM pg_class WHERE oid = to_regclass('messages')), 0), 0)))) / 1024)::text || 'kB',
    false)"""
_LOST = (psycopg.OperationalError, psycopg.InterfaceError)

# Each word's tsquery and how many messages hold it: the planner's statistics (ANALYZE's most common
# lexemes) for a common word, else counted through the GIN index (a rare word: few rows; capped). A
# phrase (a word the parser splits, an identifier such as parse_config: 'pars' <-> 'config') also says
# which messages hold it: GIN keeps no positions, so each message holding its words is read to check
# their order (124,671 for 1,667 matches at a million messages, 2 s), and the leg then matches on these
# ids instead of checking them all again (``_fulltext_cte``). ``counted`` is MATERIALIZED: inlined, each use
# of ``ids`` ran its subquery again.
_TERMS = """
WITH words AS (
    SELECT i, phraseto_tsquery('english', w) AS q, tsvector_to_array(to_tsvector('english', w)) AS lexemes
    FROM unnest(%(words)s::text[]) WITH ORDINALITY u(w, i)
), common AS MATERIALIZED (
    SELECT e.lexeme, e.freq FROM pg_stats s,
           unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(lexeme, freq)
    WHERE s.schemaname = current_schema() AND s.tablename = 'messages' AND s.attname = 'content_tsv'
), counted AS MATERIALIZED (
    SELECT i, q, phrase, CASE WHEN phrase AND %(listed)s THEN (SELECT coalesce(array_agg(id), '{}') FROM (
               SELECT id FROM messages WHERE content_tsv @@ q LIMIT %(cap)s) capped) END AS ids
    FROM (SELECT i, q, cardinality(lexemes) > 1 AS phrase FROM words WHERE numnode(q) > 0) w
)
SELECT q::text, coalesce(
    cardinality(ids),
    CASE WHEN NOT phrase THEN (SELECT round(freq * %(total)s)::bigint FROM common
                               WHERE lexeme = (SELECT lexemes[1] FROM words WHERE words.i = counted.i) LIMIT 1) END,
    (SELECT count(*) FROM (SELECT FROM messages WHERE content_tsv @@ q LIMIT %(cap)s) capped)), ids
FROM counted ORDER BY i"""

# ts_rank_cd(v, q, 0) is 0.1 per cover of q in v: per occurrence of a word, or of a phrase (a word
# the tokenizer splits, get_config: FTS5 counts that phrase too), so tf = 10 x it, exactly
_TF = "round(10 * ts_rank_cd(m.v, %(q{i})s::tsquery, 0))"
_BM25_TERM = "%(idf{i})s * {tf} * %(k1_1)s / ({tf} + %(k1_b)s + %(k1_b_avg)s * m.length)"
# bm25's document length: the message's words as the journal counts them (sync stores them; a row
# pushed by an earlier version has none, and its lexeme count stands in)
_LENGTH = "coalesce(m.content_words, length(m.content_tsv))"

# v: the tsvector read (and decompressed) once per message, not once per term
_MATCHED = """
matched AS (
    SELECT m.id, m.session_id, m.conversation_id, m.sequence_num, ({score})::float8 AS score
    FROM (SELECT m.id, c.session_id, m.conversation_id, m.sequence_num, m.content_tsv || ''::tsvector AS v,
                 """ + _LENGTH + """ AS length
          FROM messages m JOIN conversations c ON c.id = m.conversation_id
          WHERE {matches} AND {where} OFFSET 0) m
    ORDER BY score DESC, m.id LIMIT %(pool)s
),"""
# A query that may match more than SCORED_MATCHES messages (its words' counts say so) ranks the newest
# of them only: reading a message's tsvector out of TOAST is most of a full-text search's cost (~40 us
# each at a million messages), and a query of common words matches a large part of the store (ranked
# whole, it ran into the statement timeout). The ids are chosen first, then read once each: a common
# word's by walking the messages_created index back from the newest until enough match (that index's
# order, so no tie-breaker: ties at the cut are rare), else through the GIN index.
_MATCHED_NEWEST = _MATCHED.replace(
    "FROM messages m JOIN conversations c ON c.id = m.conversation_id\n          WHERE {matches} AND {where} OFFSET 0) m",
    """FROM (SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id
                WHERE {matches} AND {where}
                ORDER BY m.created_at DESC LIMIT %(scored)s) newest
          JOIN messages m ON m.id = newest.id JOIN conversations c ON c.id = m.conversation_id OFFSET 0) m""")

# Scores are ordered as float4, then by place, as in the journal: sums differ in their last bits.
_RANKED = """
fulltext AS (
    SELECT id, session_id, score,
           row_number() OVER (ORDER BY score::float4 DESC, session_id COLLATE "C", sequence_num) AS rank
    FROM {scored} ORDER BY rank LIMIT %(candidates)s
)"""

# The top matches lend part of their score to the messages around them; the filters choose what is ranked.
_LENT = """
lent AS (
    SELECT m.id, m.session_id, m.sequence_num,
           sum(CASE WHEN m.sequence_num = p.sequence_num THEN p.score ELSE %(lend)s * p.score END) AS score
    FROM matched p CROSS JOIN LATERAL (
        SELECT m.id, c.session_id, m.sequence_num FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE m.conversation_id = p.conversation_id
          AND m.sequence_num BETWEEN p.sequence_num - %(span)s AND p.sequence_num + %(span)s AND {where}
        OFFSET 0) m
    GROUP BY m.id, m.session_id, m.sequence_num
),"""

_SEMANTIC = """
nearest AS (
    SELECT v.message_id, c.session_id, v.start_char, v.end_char, {distance} AS distance
    FROM {table} v JOIN messages m ON m.id = v.message_id JOIN conversations c ON c.id = m.conversation_id
    WHERE {where}
    ORDER BY {order} LIMIT %(knn)s
),
semantic AS (
    SELECT message_id AS id, session_id, 1 - distance AS score, start_char, end_char,
           row_number() OVER (ORDER BY distance, message_id) AS rank
    FROM (SELECT DISTINCT ON (message_id) * FROM nearest ORDER BY message_id, distance) best
    ORDER BY rank LIMIT %(candidates)s
)"""

# (whether the space is tallied, messages with its vectors, messages it embeds) from sql/0007_tallies.sql
_TALLIES = """
SELECT EXISTS (SELECT FROM vector_tally WHERE space_id = %(space)s),
       (SELECT coalesce(sum(delta), 0) FROM vector_tally WHERE space_id = %(space)s),
       (SELECT coalesce(sum(delta), 0) FROM message_tally WHERE NOT is_copy AND kind <> ALL(%(skipped)s))"""
_COUNT_MESSAGES = "SELECT count(*) FROM messages WHERE NOT is_copy AND kind <> ALL(%(skipped)s)"

# Every space, and whether its index is on a halfvec cast (a search orders by that expression to use it)
_SPACES = """
SELECT id, key, provider, model, dimensions, options, canary, index_kind, index_lists,
       coalesce((SELECT i.indexdef LIKE '%::halfvec(%' FROM pg_indexes i
                 WHERE i.schemaname = current_schema() AND i.indexname = 'vectors_' || s.id || '_embedding'), false)
FROM spaces s ORDER BY id"""

_NO_FULLTEXT = "fulltext AS (SELECT NULL::uuid AS id, NULL::text AS session_id, NULL::float8 AS score, " \
               "NULL::bigint AS rank WHERE false)"
_NO_SEMANTIC = "semantic AS (SELECT NULL::uuid AS id, NULL::text AS session_id, NULL::float8 AS score, " \
               "NULL::int AS start_char, NULL::int AS end_char, NULL::bigint AS rank WHERE false)"

_FUSED = """
SELECT coalesce(f.id, s.id), coalesce(f.session_id, s.session_id), f.rank, f.score, s.rank, s.score,
       s.start_char, s.end_char,
       coalesce(%(w_fulltext)s::float8 / (%(k_fulltext)s + f.rank), 0)
       + coalesce(%(w_semantic)s::float8 / (%(k_semantic)s + s.rank), 0) AS fused
FROM fulltext f FULL OUTER JOIN semantic s ON f.id = s.id
ORDER BY fused DESC, least(f.rank, s.rank), f.rank NULLS LAST"""

_HIT = """
SELECT m.id, c.session_id, c.name, c.project_path, c.git_branch, m.role, m.kind, m.sequence_num, m.created_at,
       m.message_uuid, m.content, c.agent_id IS NOT NULL
FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.id = ANY(%s)"""

_NEIGHBOURS = """
SELECT h.session_id, h.seq, m.sequence_num, m.role, m.kind, left(m.content, %(chars)s)
FROM unnest(%(sessions)s::text[], %(seqs)s::int[]) AS h(session_id, seq)
JOIN conversations c ON c.session_id = h.session_id
JOIN messages m ON m.conversation_id = c.id
     AND m.sequence_num BETWEEN h.seq - %(span)s AND h.seq + %(span)s AND m.sequence_num <> h.seq
WHERE m.kind = ANY(%(kinds)s)
ORDER BY h.session_id, h.seq, m.sequence_num"""

_SESSIONS = """
SELECT c.session_id, c.name, c.project_path, c.git_branch, c.started_at, c.last_at,
       coalesce((SELECT max(sequence_num) + 1 FROM messages m WHERE m.conversation_id = c.id), 0),
       c.machine, c.parent_session_id, c.agent_id IS NOT NULL, c.entrypoint, c.machine_made
FROM conversations c"""
_SESSION_NAMES = ("session_id", "name", "project_path", "git_branch", "started_at", "last_at", "message_count",
                  "machine", "parent_session_id", "is_subagent", "entrypoint", "machine_made")
_HIT_NAMES = ("session_id", "session_name", "project_path", "git_branch", "role", "kind", "seq", "timestamp",
              "uuid", "content", "is_subagent")


class PgSearch:
    """Search and read the canonical store on one connection; ``source`` is ``"postgres"``."""

    source = "postgres"

    def __init__(self, conn, url="", on_lost=None, match_rows=MATCH_ROWS, scored_matches=SCORED_MATCHES,
                 allow_insecure_remote=False):
        self.conn, self.url, self.on_lost, self.match_rows = conn, url, on_lost, match_rows
        self.scored_matches, self.allow_insecure_remote = scored_matches, allow_insecure_remote
        self._spaces_cache, self._spaces_at = None, float("-inf")
        self._breadth = {}   # per connection ("main", "helper"): the index breadth last set on it
        self._stats, self._stats_at = None, float("-inf")
        self._coverage, self._tallied = {}, None
        # the second connection a hybrid search runs its vector leg on (see ``candidates``)
        self._helper, self._helper_failed_at = None, float("-inf")

    def close(self):
        self._drop_helper()
        self.conn.close()

    @contextmanager
    def _guard(self):
        """A lost connection becomes PostgresUnavailable (and tells the link). A statement that ran out of
        time (``STATEMENT_TIMEOUT_MS``) does too, for this search only: the connection is fine (autocommit),
        and the searches after it ask Postgres again."""
        try:
            yield
        except psycopg.errors.QueryCanceled:
            raise PostgresUnavailable("Postgres did not finish this search within its statement timeout "
                                      f"({STATEMENT_TIMEOUT_MS / 1000:g} s)") from None
        except _LOST as exc:
            if self.on_lost is not None:
                self.on_lost(self)
            text = " ".join(str(exc).split()) or type(exc).__name__
            raise PostgresUnavailable(f"lost the connection to Postgres: {dburl.hide_password(text, self.url)}") from None

    def _rows(self, sql, params=None):
        with self._guard():
            return self.conn.execute(sql, params).fetchall()

    # -- spaces ---------------------------------------------------------------------------

    def space(self, key):
        rows = [s for s in self._spaces() if s["key"] == key]
        return rows[0] if rows else None

    def spaces(self):
        return [s for s in self._spaces() if s["vectors"]]

    def _spaces(self):
        """Every space with its canary and whether it holds vectors (kept ``SPACES_TTL`` seconds
        once vectors exist: each search asks, and a round trip is most of a search's cost)."""
        if self._spaces_cache is not None and time.monotonic() - self._spaces_at < SPACES_TTL:
            return self._spaces_cache
        names = ("id", "key", "provider", "model", "dimensions", "options", "canary", "index_kind", "index_lists",
                 "halfvec_index")
        out = [dict(zip(names, row)) for row in self._rows(_SPACES)]
        for s in out:
            s["vectors"] = self._rows(f"SELECT EXISTS (SELECT 1 FROM {store.vector_table(s['id'])})")[0][0]
            s["canary"] = _array(s["canary"])
        if any(s["vectors"] for s in out):
            self._spaces_cache, self._spaces_at = out, time.monotonic()
        return out

    # -- search -----------------------------------------------------------------------------

    def candidates(self, plan):
        """Both legs and their fusion (a one-leg plan: that leg alone).

        A hybrid search runs its vector leg on a second connection while the full-text leg runs on
        this one, and fuses the two in Python (``search.core.fuse``: the same weighted RRF and order
        as ``_FUSED``): Postgres runs one statement on one core, and the two legs took about as long
        each (35 and 32 ms at 1M messages). Without that connection (none could be opened, or it was
        lost), both legs and their fusion are one statement on this one, as before.
        """
        if "fulltext" in plan.legs and "semantic" in plan.legs:
            helper = self._helper_conn()
            if helper is not None:
                return self._apart(plan, helper)
        return self._together(plan, plan.legs)

    def _together(self, plan, legs, conn=None):
        where, params = _filters(plan.filters)
        params.update(candidates=plan.candidates, k_fulltext=plan.rrf_k["fulltext"],
                      k_semantic=plan.rrf_k["semantic"], w_fulltext=plan.weights.get("fulltext", 1.0),
                      w_semantic=plan.weights.get("semantic", 1.0))
        parts = [_NO_FULLTEXT, _NO_SEMANTIC]
        if "fulltext" in legs:
            parts[0] = self._fulltext_cte(plan, where, params)
        if "semantic" in legs:
            parts[1] = self._semantic_cte(plan, where, params, conn or self.conn)
        sql = "WITH " + ",".join(parts) + _FUSED
        if conn is None:
            rows = self._rows(sql, params)
        else:   # the helper's own failures are handled by ``_apart``
            rows = conn.execute(sql, params).fetchall()
        return [Candidate(key, session, _legs(("fulltext", f_rank), ("semantic", s_rank)),
                          _legs(("fulltext", f_score), ("semantic", s_score)), fused,
                          (start, end) if start is not None else None)
                for key, session, f_rank, f_score, s_rank, s_score, start, end, fused in rows]

    def _apart(self, plan, helper):
        """The vector leg on ``helper`` in a thread, the full-text leg here, then their fusion."""
        out = {}

        def vector_leg():
            try:
                out["semantic"] = self._together(plan, ("semantic",), helper)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
                out["error"] = exc

        thread = threading.Thread(target=vector_leg, name="chats-pg-vectors", daemon=True)
        thread.start()
        try:
            fulltext = self._together(plan, ("fulltext",))
        finally:
            thread.join()
        error = out.get("error")
        if isinstance(error, psycopg.errors.QueryCanceled):
            with self._guard():
                raise error
        if isinstance(error, _LOST):   # only the helper broke: this search's vector leg runs here
            self._drop_helper()
            self._helper_failed_at = time.monotonic()
            out["semantic"] = self._together(plan, ("semantic",))
        elif error is not None:
            raise error
        return fuse({"fulltext": fulltext, "semantic": out["semantic"]}, plan.rrf_k, plan.weights)

    def _helper_conn(self):
        """The second connection, opened at the first hybrid search; None when there is none (no URL,
        or it could not be opened in the last ``HELPER_RETRY`` seconds)."""
        if self._helper is not None:
            return self._helper
        if not self.url or time.monotonic() - self._helper_failed_at < HELPER_RETRY:
            return None
        try:
            self._helper = _configured(pg.connect(self.url, self.allow_insecure_remote, HELPER_CONNECT_TIMEOUT),
                                       self.url)
        except (ClaudeChatsError, psycopg.Error):
            self._helper_failed_at = time.monotonic()
            return None
        self._breadth.pop("helper", None)
        return self._helper

    def _drop_helper(self):
        helper, self._helper = self._helper, None
        self._breadth.pop("helper", None)
        if helper is not None:
            try:
                helper.close()
            except psycopg.Error:
                pass

    def _fulltext_cte(self, plan, where, params):
        """The full-text leg: bm25-like scores of the matches, plus what their neighbours lend."""
        terms, match = self._terms(plan)
        if not terms:
            return _NO_FULLTEXT
        total, avgdl = self._text_stats()
        score = []
        for i, (query, count, _ids) in enumerate(terms):
            idf = max(math.log((max(total, count) - count + 0.5) / (count + 0.5)), 1e-6)
            params.update({f"q{i}": query, f"idf{i}": idf})
            score.append(_BM25_TERM.format(i=i, tf=_TF.format(i=i)))
        params.update(k1_1=BM25_K1 + 1, k1_b=BM25_K1 * (1 - BM25_B), k1_b_avg=BM25_K1 * BM25_B / avgdl,
                      scored=self.scored_matches)
        if plan.match == "all":
            params["text"] = web_tsquery(plan.text)
            matches = "m.content_tsv @@ to_tsquery('english', %(text)s)"
        else:
            matches = self._matches(terms, match, params)
        counts = [count for _, count, _ids in terms]
        most = min(counts) if "all" in (plan.match, match) else sum(counts)   # the matches there may be
        matched = _MATCHED_NEWEST if most > self.scored_matches else _MATCHED
        if not plan.neighbours:
            params["pool"] = plan.candidates
            return matched.format(score=" + ".join(score), matches=matches, where=where) + _RANKED.format(scored="matched")
        lenders, lender_params = _filters(replace(plan.filters, role=None, since=None, until=None))
        params.update(lender_params, pool=plan.candidates * FULLTEXT_POOL, lend=plan.neighbours, span=NEIGHBOUR_SPAN)
        return (matched.format(score=" + ".join(score), matches=matches, where=lenders)
                + _LENT.format(where=where) + _RANKED.format(scored="lent"))

    def _matches(self, terms, match, params):
        """The SQL condition a message of the leg meets: it holds any (``match`` "any") or every term. A
        phrase whose every match ``_TERMS`` listed (fewer than its cap) is matched by those ids, which is
        the same set: its candidates are not read again to check the words' order."""
        listed = [ids if ids is not None and len(ids) <= self.match_rows else None for _q, _count, ids in terms]
        if all(ids is None for ids in listed):
            params["any"] = (" | " if match == "any" else " & ").join(f"({q})" for q, _count, _ids in terms)
            return "m.content_tsv @@ %(any)s::tsquery"
        conditions = []
        for i, ids in enumerate(listed):
            if ids is not None:
                params[f"ids{i}"] = ids
                conditions.append(f"m.id = ANY(%(ids{i})s::uuid[])")
            else:
                conditions.append(f"m.content_tsv @@ %(q{i})s::tsquery")
        return "(" + (" OR " if match == "any" else " AND ").join(conditions) + ")"

    def _terms(self, plan):
        """([(tsquery text, messages holding it, their ids for a phrase (``_TERMS``) else None)], "any" or "all")
        of what bm25 scores, as FTS5 does:
        an any-word query's words (those ``search.selective`` keeps), a web-search query's phrases
        (a repeated one counts again)."""
        if plan.match == "all":
            groups, _negatives = web_query(plan.text)
            words = [" ".join(item) for group in groups for item in group]
        else:
            words = any_words(plan.text)
        total = self._text_stats()[0]
        # (a web-search query matches its own expression, negations included: its phrases' ids are not listed)
        rows = self._rows(_TERMS, {"words": words, "cap": self.match_rows + 1, "total": total,
                                   "listed": plan.match != "all"}) if words else []
        if plan.match == "any" and len(rows) > 1:
            return selective(rows, [count for _, count, _ids in rows], total, self.match_rows)
        return rows, "any"

    def _text_stats(self):
        """(message count, mean words per message), kept ``STATS_TTL`` seconds: bm25's N and avgdl
        (the mean of a sample of pages on a large table)."""
        if self._stats is None or time.monotonic() - self._stats_at >= STATS_TTL:
            total = self._message_total()
            percent = min(100.0, 100.0 * 5000 / max(total, 1))
            mean = self._rows(f"SELECT avg({_LENGTH}) FROM messages m TABLESAMPLE SYSTEM ({percent:.6f})")
            self._stats = (max(total, 1), max(float(mean[0][0] or 1.0), 1.0))
            self._stats_at = time.monotonic()
        return self._stats

    def coverage(self, space_id, skipped=()):
        """(messages with vectors of the space, messages it embeds: not a fork's copy, not of the kinds
        ``skipped``), kept ``STATS_TTL`` seconds."""
        cached = self._coverage.get((space_id, skipped))
        if cached is None or time.monotonic() - cached[0] >= STATS_TTL:
            params = {"space": space_id, "skipped": list(skipped)}
            tallied = self._tallies(params)
            if tallied[0]:   # sql/0007_tallies.sql: what the triggers counted
                embedded, total = tallied[1:]
            else:            # a database not migrated yet, or a space its triggers do not count
                embedded = self._rows(f"SELECT count(DISTINCT message_id) FROM {store.vector_table(space_id)}")[0][0]
                total = self._rows(_COUNT_MESSAGES, params)[0][0]
            cached = self._coverage[(space_id, skipped)] = (time.monotonic(), (int(embedded), int(total)))
        return cached[1]

    def _tallies(self, params):
        """_TALLIES' row, or (False, 0, 0) where there are none this role may read."""
        return self._rows(_TALLIES, params)[0] if self._tallies_readable() else (False, 0, 0)

    def _tallies_readable(self):
        if self._tallied is None:
            self._tallied = bool(self._rows("SELECT has_table_privilege(to_regclass('vector_tally'), 'SELECT') "
                                       "AND has_table_privilege(to_regclass('message_tally'), 'SELECT')")[0][0])
        return self._tallied

    def _message_total(self):
        """Every message stored, bm25's N: the tallies' sum (sql/0007_tallies.sql, seeded with the count
        when it was applied) where this role may read them, else counted. Counting took 47-106 ms at 1M
        messages, in every searching process's first search."""
        if self._tallies_readable():
            return int(self._rows("SELECT coalesce(sum(delta), 0) FROM message_tally")[0][0])
        return self._rows("SELECT count(*) FROM messages")[0][0]

    def _semantic_cte(self, plan, where, params, conn):
        vector = plan.query_vector()   # waited for here, after the full-text leg's round trips
        dimensions = len(vector)
        exact = "v.embedding <=> %(vector)s::vector"
        # the spaces as last read: a helper's thread must not refresh them on the main connection
        # while the full-text leg uses it (read now when never read)
        known = self._spaces_cache if self._spaces_cache is not None else self._spaces()
        space = next((s for s in known if s["id"] == plan.space_id), {})
        if space.get("halfvec_index"):
            # the index's order finds the candidates, the exact distance ranks and scores them
            indexed = f"(v.embedding::halfvec({dimensions})) <=> (%(vector)s::vector::halfvec({dimensions}))"
        else:
            indexed = exact
        # as text: with pgvector's binary parameter the same statement runs several times slower
        params.update(vector=str(vector.tolist()), knn=plan.candidates * 2)
        self._set_breadth(plan, space, conn)
        # One session is a small set: scan it exactly rather than walk the whole index.
        order = f"({exact}) + 0" if plan.filters.session_id else indexed
        return _SEMANTIC.format(distance=exact, order=order, where=where,
                                table=store.vector_table(plan.space_id))

    def _set_breadth(self, plan, space, conn):
        """How much of ``space``'s index a vector search reads: ``hnsw.ef_search`` for an HNSW index,
        ``ivfflat.probes`` for an ivfflat one (its lists as the last index refresh recorded them), set
        on ``conn`` when it changes (the helper's failures are ``_apart``'s to handle)."""
        if space.get("index_kind") == "ivfflat":
            setting = f"ivfflat.probes = {store.ivfflat_probes(space.get('index_lists'))}"
        else:
            setting = f"hnsw.ef_search = {min(1000, max(EF_SEARCH_MIN, plan.candidates * 2))}"
        which = "main" if conn is self.conn else "helper"
        if setting != self._breadth.get(which):
            if which == "main":
                with self._guard():
                    conn.execute(f"SET {setting}")
            else:
                conn.execute(f"SET {setting}")
            self._breadth[which] = setting

    def hydrate(self, keys):
        if not keys:
            return {}
        return {row[0]: dict(zip(_HIT_NAMES, row[1:])) for row in self._rows(_HIT, (list(keys),))}

    def neighbours(self, places, span):
        out = {place: [] for place in places}
        rows = self._rows(_NEIGHBOURS, {"sessions": [p[0] for p in places], "seqs": [p[1] for p in places],
                                        "span": span, "kinds": list(transcript.CONVERSATION_KINDS), "chars": NEIGHBOUR_READ + 1})
        for session, seq, n_seq, role, kind, text in rows:
            out[(session, seq)].append({"seq": n_seq, "role": role, "kind": kind,
                                        "text": shorten(text, NEIGHBOUR_READ)})
        return out

    # -- conversations ----------------------------------------------------------------------

    def session(self, session_id):
        rows = [] if _holds_nul(session_id) else self._rows(_SESSIONS + " WHERE c.session_id = %s", (session_id,))
        if not rows:
            raise SessionNotFound(f"no session {session_id!r} in Postgres (see list_recent_sessions)")
        return dict(zip(_SESSION_NAMES, rows[0]))

    def messages(self, session_id, start, end, kinds, limit):
        rows = self._rows(
            "SELECT m.sequence_num, m.role, m.kind, m.created_at, m.content FROM messages m "
            "JOIN conversations c ON c.id = m.conversation_id WHERE c.session_id = %s AND m.sequence_num >= %s "
            "AND (%s::int IS NULL OR m.sequence_num <= %s) AND m.kind = ANY(%s) ORDER BY m.sequence_num LIMIT %s",
            (session_id, start, end, end, list(kinds), limit))
        return [dict(zip(("seq", "role", "kind", "timestamp", "content"), row)) for row in rows]

    def sessions(self, limit, project_path, include_subagents, origin="human"):
        if _holds_nul(project_path):
            return []
        where, params = [ORIGIN_SQL[origin]] if origin in ORIGIN_SQL else [], {"limit": limit}
        if project_path:
            where.append("(c.project_path = %(project)s OR starts_with(c.project_path, %(prefix)s))")
            params.update(project=project_path, prefix=project_path.rstrip("/") + "/")
        if not include_subagents:
            where.append("c.agent_id IS NULL")
        sql = (_SESSIONS + (" WHERE " + " AND ".join(where) if where else "")
               + " ORDER BY c.last_at DESC NULLS LAST LIMIT %(limit)s")
        return [dict(zip(_SESSION_NAMES, row)) for row in self._rows(sql, params)]

    def subagents(self, session_id):
        if _holds_nul(session_id):
            return []
        sql = (_SESSIONS + " WHERE c.parent_session_id = %s AND c.agent_id IS NOT NULL "
               "ORDER BY c.started_at NULLS LAST, c.session_id")
        return [dict(zip(_SESSION_NAMES, row)) for row in self._rows(sql, (session_id,))]


def web_tsquery(text):
    """``search.web_query`` of ``text`` as ``to_tsquery`` input: the journal's reading of web-search
    syntax (Postgres' ``websearch_to_tsquery`` reads ``a b or c d`` as ``(a & b) | (c & d)``, the
    journal as ``a & (b | c) & d``). Each word is quoted; a phrase's words follow each other."""
    groups, negatives = web_query(text)

    def item(words):
        return "(" + " <-> ".join("'" + w.replace("'", "''") + "'" for w in words) + ")"

    expression = " & ".join("(" + " | ".join(item(i) for i in g) + ")" for g in groups)
    return " & ".join([expression] + [f"!{item(n)}" for n in negatives]) if expression else ""


def _array(value):
    """A pgvector value (numpy array or ``pgvector.Vector``) as float32, or None."""
    if value is None:
        return None
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, dtype=np.float32)


def _legs(*pairs):
    return {leg: value for leg, value in pairs if value is not None}


def _holds_nul(value):
    """Whether ``value`` has a NUL character, which no Postgres text holds (so it matches nothing)."""
    return isinstance(value, str) and "\x00" in value


def _filters(filters):
    """SQL conditions over messages ``m`` and conversations ``c``, with their named parameters."""
    where, params = ["m.kind = ANY(%(kinds)s)", "NOT m.is_copy"], {"kinds": list(filters.kinds)}   # copies: found once
    if _holds_nul(filters.session_id) or _holds_nul(filters.project_path):
        return "false", params   # Postgres would refuse the parameter; no stored text could match it
    if filters.project_path:
        where.append("(c.project_path = %(project)s OR starts_with(c.project_path, %(prefix)s))")
        params.update(project=filters.project_path, prefix=filters.project_path.rstrip("/") + "/")
    for condition, name, value in (("c.session_id = %(session)s", "session", filters.session_id),
                                   ("m.role = %(role)s", "role", filters.role),
                                   ("m.created_at >= %(since)s", "since", filters.since),
                                   ("m.created_at < %(until)s", "until", filters.until)):
        if value is not None:
            where.append(condition)
            params[name] = value
    if not filters.include_subagents:
        where.append("c.agent_id IS NULL")
    if filters.origin in ORIGIN_SQL:
        where.append(ORIGIN_SQL[filters.origin])
    return " AND ".join(where), params


ORIGIN_SQL = {"human": "NOT c.machine_made", "machine": "c.machine_made"}


def open_search(url, allow_insecure_remote=False, connect_timeout=2, match_rows=MATCH_ROWS,
                scored_matches=SCORED_MATCHES):
    """A ``PgSearch`` on a new connection; PostgresUnavailable when the store is unusable."""
    try:
        conn = pg.connect(url, allow_insecure_remote, connect_timeout)
    except ClaudeChatsError as exc:
        raise PostgresUnavailable(str(exc)) from None
    try:
        ready = conn.execute("SELECT to_regclass('conversations') IS NOT NULL").fetchone()[0]
        if not ready:
            conn.close()
            raise PostgresUnavailable(f"Postgres at {dburl.mask(url)} has no claude-chats tables yet: "
                                      "run `chats sync`")
    except psycopg.Error as exc:
        conn.close()
        raise PostgresUnavailable(f"Postgres at {dburl.mask(url)} is not usable: "
                                  f"{dburl.hide_password(' '.join(str(exc).split()), url)}") from None
    conn = _configured(conn, url)
    return PgSearch(conn, url, match_rows=match_rows, scored_matches=scored_matches,
                    allow_insecure_remote=allow_insecure_remote)


def _configured(conn, url):
    """``conn`` with a searcher's session settings; closed, and PostgresUnavailable, when they fail."""
    try:
        conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        # psycopg prepares repeated statements; a generic plan cannot see the query vector, the
        # tsquery or the ids, and picks sequential scans: plan each call with its values
        conn.execute("SET plan_cache_mode = force_custom_plan")
        conn.execute(_WORK_MEM, {"per_page": SEARCH_BITMAP_BYTES_PER_PAGE, "least": SEARCH_WORK_MEM_MIN_MB << 20,
                                 "most": SEARCH_WORK_MEM_MAX_MB << 20})
        _try(conn, "SET hnsw.iterative_scan = relaxed_order")   # pgvector >= 0.8: filtered KNN fills up
        _try(conn, "SET ivfflat.iterative_scan = relaxed_order")
    except psycopg.Error as exc:
        conn.close()
        raise PostgresUnavailable(f"Postgres at {dburl.mask(url)} is not usable: "
                                  f"{dburl.hide_password(' '.join(str(exc).split()), url)}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _try(conn, sql):
    try:
        conn.execute(sql)
    except psycopg.Error:
        pass


class Connected:
    """A searcher's ``remote`` over one open ``PgSearch``, never reconnecting (benchmarks, ``chats eval``
    scripts, tests): ``PgLink`` is the one that waits, retries and falls back."""

    def __init__(self, backend):
        self._backend = backend

    def backend(self):
        return self._backend

    def close(self):
        self._backend.close()


class PgLink:
    """Postgres for a long-lived searcher: never waited on longer than ``wait`` seconds.

    ``backend()`` returns the connected ``PgSearch`` or raises
    ``PostgresUnavailable`` at once (the last failure is recent) or after at most
    ``wait`` seconds (a connection attempt is under way in the background).
    """

    def __init__(self, url, allow_insecure_remote=False, wait=1.5, retry_after=5.0, connect_timeout=2,
                 opener=open_search):
        self.url, self.allow_insecure_remote = url, allow_insecure_remote
        self.wait, self.retry_after, self.connect_timeout, self.opener = wait, retry_after, connect_timeout, opener
        self._lock = threading.Lock()
        self._search = self._thread = self._error = None
        self._failed_at = float("-inf")

    def start(self):
        """Begin connecting in the background (the MCP server calls this in its lifespan)."""
        with self._lock:
            self._start_locked()

    def _start_locked(self):
        if self._search is None and self._thread is None:
            self._thread = threading.Thread(target=self._connect, name="chats-pg-connect", daemon=True)
            self._thread.start()

    def _connect(self):
        search = error = None
        try:
            search = self.opener(self.url, self.allow_insecure_remote, self.connect_timeout)
            search.on_lost = self.lost
        except PostgresUnavailable as exc:
            error = str(exc)
        except Exception as exc:  # noqa: BLE001 - any failure means "answer from the journal", with why
            error = f"cannot use Postgres at {dburl.mask(self.url)}: {type(exc).__name__}: " \
                    f"{dburl.hide_password(str(exc), self.url)}"
        with self._lock:
            self._search, self._error, self._thread = search, error, None
            if search is None:
                self._failed_at = time.monotonic()

    def backend(self):
        with self._lock:
            if self._search is not None:
                return self._search
            if time.monotonic() - self._failed_at >= self.retry_after:
                self._start_locked()
            thread = self._thread
        if thread is not None:
            thread.join(self.wait)
        with self._lock:
            if self._search is not None:
                return self._search
            if self._thread is not None:
                raise PostgresUnavailable(f"Postgres at {dburl.mask(self.url)} did not answer within "
                                          f"{self.wait:g} s")
            raise PostgresUnavailable(self._error or "Postgres is unavailable")

    def lost(self, search):
        """The connection of ``search`` broke: drop it, and retry after ``retry_after`` seconds."""
        with self._lock:
            if self._search is search:
                self._search = None
                self._failed_at = time.monotonic()
                self._error = "the connection to Postgres was lost"
        try:
            search.close()
        except psycopg.Error:
            pass

    def close(self):
        with self._lock:
            search, self._search = self._search, None
        if search is not None:
            search.close()
