"""The journal's side of search: an FTS5 (bm25) leg and a sqlite-vec leg.

``LocalSearch(journal)`` is the searcher's ``local`` backend (see
``claude_chats.search.Backend``). Each leg is one query; ``search.fuse``
combines them with Reciprocal Rank Fusion, exactly as Postgres does in SQL.

Full text: the query is read like Postgres' ``websearch_to_tsquery``
(words are ANDed, ``"quoted phrases"``, ``or`` between words, ``-word``
excludes, English stopwords dropped) and written as a safe FTS5 expression:
typed text is never parsed as FTS5 syntax.

Vectors: the chunk vectors of a space live in the sqlite-vec table
``vec_<space id>`` (rowid = ``chunks.id``). KNN takes the nearest chunks,
filters, and keeps each message's best chunk; when the filters leave too few
(a session, a small project), the filtered chunks are scanned exactly.
"""

import json
import re

from ..search import STOPWORDS, Candidate, fuse, iso, query_terms
from . import fts
from .journal import Journal

KNN_MAX = 4096          # sqlite-vec's limit on k
_VEC_COLUMN = re.compile(r"(\w+)\s+float\[(\d+)\]", re.IGNORECASE)
_METRIC = re.compile(r"distance_metric\s*=\s*(\w+)", re.IGNORECASE)
_TOKEN = re.compile(r'(-?)"([^"]*)"?|(-?)([^\s"]+)')


def fts_match(text, match="all"):
    """An FTS5 MATCH expression for typed ``text`` (None when it has no word to look for)."""
    if match == "any":
        words = query_terms(text)
        return " OR ".join(fts.quote(w) for w in words) or None
    groups, negatives, joined = [], [], False
    for neg_q, phrase, neg_w, word in _TOKEN.findall(text or ""):
        raw = phrase or word
        if not phrase and raw.lower() == "or":
            joined = bool(groups)
            continue
        words = fts.terms(raw)
        if not words:
            continue
        term = fts.quote(" ".join(words))
        if neg_q or neg_w:
            negatives.append(term)
        elif joined:
            groups[-1].append(term)
        else:
            groups.append([term])
        joined = False
    groups = _drop_stopwords(groups)
    if not groups:
        return None
    expression = " AND ".join(g[0] if len(g) == 1 else "(" + " OR ".join(g) + ")" for g in groups)
    return "".join([f"({expression})" if negatives else expression] + [f" NOT {n}" for n in negatives])


def _drop_stopwords(groups):
    """Single stopwords go (as in Postgres' english config), unless nothing else is left."""
    kept = [g for g in groups if len(g) > 1 or g[0][1:-1].lower() not in STOPWORDS]
    return kept or groups


class LocalSearch:
    """Search and read the journal; ``source`` is ``"local"``."""

    source = "local"

    def __init__(self, journal):
        self.journal, self.conn = journal, journal.conn
        self._vec_loaded = False
        self._vec_tables = {}

    @classmethod
    def open(cls, path=None):
        return cls(Journal.open(path))

    def close(self):
        self.journal.close()

    # -- spaces ---------------------------------------------------------------------------

    def space(self, key):
        rows = self._spaces("WHERE key = ?", (key,))
        return rows[0] if rows else None

    def spaces(self):
        """Spaces that hold vectors."""
        return [s for s in self._spaces("", ()) if s["vectors"]]

    def _spaces(self, where, args):
        import numpy as np

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

    # -- the legs ---------------------------------------------------------------------------

    def candidates(self, plan):
        legs = {}
        if "fulltext" in plan.legs:
            legs["fulltext"] = self.fulltext(plan)
        if "semantic" in plan.legs:
            legs["semantic"] = self.semantic(plan)
        return fuse(legs, plan.rrf_k)

    def fulltext(self, plan):
        """Messages matching the query, best bm25 first (at most ``plan.candidates``)."""
        match = fts_match(plan.text, plan.match)
        if match is None:
            return []
        where, args = _filters(plan.filters)
        sql = (f"SELECT m.id, m.session_id, bm25(messages_fts) FROM messages_fts "
               f"JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id "
               f"WHERE messages_fts MATCH ? AND {where} ORDER BY bm25(messages_fts) LIMIT ?")
        rows = self.conn.execute(sql, (match, *args, plan.candidates)).fetchall()
        return [Candidate(i, session, scores={"fulltext": -score}) for i, session, score in rows]

    def semantic(self, plan):
        """Messages by their nearest chunk to ``plan.vector`` (cosine similarity, best first)."""
        table, column, metric = self._vec_table(plan.space_id)
        blob = plan.vector.astype("float32").tobytes()
        where, args = _filters(plan.filters)
        found = []
        if plan.filters.session_id is None:
            knn = min(KNN_MAX, plan.candidates * (4 if _only_kinds(plan.filters) else 16))
            found = self._knn(table, column, blob, knn, where, args, plan.candidates)
            if len(found) >= plan.candidates or knn >= self._chunk_count(plan.space_id):
                return self._similarities(found, metric)
        found = self._exact(table, column, metric, blob, plan.space_id, where, args, plan.candidates)
        return self._similarities(found, metric)

    def _knn(self, table, column, blob, knn, where, args, limit):
        sql = (f"WITH knn AS (SELECT rowid, distance FROM {table} WHERE {column} MATCH ? AND k = ?) "
               f"SELECT c.message_id, m.session_id, min(knn.distance) AS d, c.start_char, c.end_char "
               f"FROM knn JOIN chunks c ON c.id = knn.rowid JOIN messages m ON m.id = c.message_id "
               f"JOIN sessions s ON s.id = m.session_id WHERE {where} "
               f"GROUP BY c.message_id ORDER BY d, c.message_id LIMIT ?")
        return self.conn.execute(sql, (blob, knn, *args, limit)).fetchall()

    def _exact(self, table, column, metric, blob, space_id, where, args, limit):
        distance = "vec_distance_cosine" if metric == "cosine" else "vec_distance_l2"
        sql = (f"SELECT c.message_id, m.session_id, min({distance}(v.{column}, ?)) AS d, c.start_char, "
               f"c.end_char FROM messages m JOIN sessions s ON s.id = m.session_id "
               f"JOIN chunks c ON c.message_id = m.id AND c.space_id = ? JOIN {table} v ON v.rowid = c.id "
               f"WHERE {where} GROUP BY c.message_id ORDER BY d, c.message_id LIMIT ?")
        return self.conn.execute(sql, (blob, space_id, *args, limit)).fetchall()

    @staticmethod
    def _similarities(rows, metric):
        def similarity(d):
            return 1.0 - d if metric == "cosine" else 1.0 - d * d / 2.0
        return [Candidate(i, session, scores={"semantic": similarity(d)}, chunk=(start, end))
                for i, session, d, start, end in rows]

    def _chunk_count(self, space_id):
        return self.conn.execute("SELECT count(*) FROM chunks WHERE space_id = ?", (space_id,)).fetchall()[0][0]

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
        if self._vec_loaded:
            return
        try:
            from . import vectors
            vectors.load_extension(self.conn)
        except ImportError:  # the vectors module has not landed: load sqlite-vec directly
            import sqlite_vec
            self.conn.enable_load_extension(True)
            self.conn.load_extension(sqlite_vec.loadable_path())
            self.conn.enable_load_extension(False)
        self._vec_loaded = True

    # -- hits -----------------------------------------------------------------------------

    def hydrate(self, keys):
        if not keys:
            return {}
        rows = self.conn.execute(
            f"SELECT m.id, {_HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id "
            "WHERE m.id IN (SELECT value FROM json_each(?))", (json.dumps(list(keys)),)).fetchall()
        return {row[0]: dict(zip(_HIT_NAMES, row[1:])) for row in rows}

    def neighbours(self, places, span):
        return {(session, seq): self.journal.neighbours(session, seq, span) for session, seq in places}

    # -- conversations ------------------------------------------------------------------------

    def session(self, session_id):
        return _session(self.journal.session(session_id))

    def messages(self, session_id, start, end, kinds, limit):
        sql = (f"SELECT seq, role, kind, created_at, content FROM messages WHERE session_id = ? AND seq >= ? "
               f"AND seq <= ? AND kind IN ({','.join('?' * len(kinds))}) ORDER BY seq LIMIT ?")
        rows = self.conn.execute(sql, (session_id, start, 1 << 62 if end is None else end, *kinds, limit))
        return [dict(zip(("seq", "role", "kind", "timestamp", "content"), row)) for row in rows]

    def sessions(self, limit, project_path, include_subagents):
        return [_session(s) for s in self.journal.sessions(limit, project_path, include_subagents)]


_HIT_NAMES = ("session_id", "session_name", "project_path", "git_branch", "role", "kind", "seq", "timestamp",
              "uuid", "content", "is_subagent")
_HIT_COLUMNS = ("m.session_id, coalesce(s.name, s.agent_name, s.summary, s.slug), s.project_path, s.git_branch, "
                "m.role, m.kind, m.seq, m.created_at, m.uuid, m.content, s.agent_id IS NOT NULL")


def _session(row):
    return {"session_id": row["session_id"], "name": row["name"], "project_path": row["project_path"],
            "git_branch": row["git_branch"], "started_at": row["first_at"], "last_at": row["last_at"],
            "message_count": row["message_count"], "machine": row["machine"],
            "parent_session_id": row["parent_session_id"], "is_subagent": row["agent_id"] is not None}


def _only_kinds(filters):
    return not (filters.project_path or filters.role or filters.since or filters.until
                or not filters.include_subagents)


def _filters(filters):
    """SQL conditions over messages ``m`` and sessions ``s`` for a ``search.Filters``."""
    where = [f"m.kind IN ({','.join('?' * len(filters.kinds))})"]
    args = list(filters.kinds)
    if filters.project_path:
        prefix = filters.project_path if filters.project_path.endswith("/") else filters.project_path + "/"
        where.append("(s.project_path = ? OR substr(s.project_path, 1, ?) = ?)")
        args += [filters.project_path, len(prefix), prefix]
    for condition, value in (("m.session_id = ?", filters.session_id), ("m.role = ?", filters.role),
                             ("m.created_at >= ?", iso(filters.since)), ("m.created_at < ?", iso(filters.until))):
        if value is not None:
            where.append(condition)
            args.append(value)
    if not filters.include_subagents:
        where.append("s.agent_id IS NULL")
    return " AND ".join(where), args


__all__ = ["LocalSearch", "fts_match"]
