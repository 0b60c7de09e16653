"""Retrieval quality: ``chats eval`` over a hand-labelled query file, and model bakeoffs.

A query file has one JSON object per line::

    {"id": "q1", "query": "why did the migration test fail", "relevant_session_ids": ["3f2a..."]}

``evaluate(searcher, queries, modes)`` runs every query in each mode and scores
the ranking of *sessions* (a session's rank is the rank of its best hit):
recall@1/5/10 (the fraction of a query's relevant sessions in the top k),
MRR and nDCG@10 (binary relevance), averaged over the queries.

``bakeoff(journal, queries, providers)`` builds one embedding space per model
from the same messages, in a scratch copy of the journal (the journal itself
is not touched), timing the embedding and measuring each space's storage, then
evaluates each with the same queries.
"""

import json
import math
import os
import shutil
import stat
import tempfile
import time
from dataclasses import dataclass, field

from . import config
from .errors import ClaudeChatsError
from .localstore import vectors
from .localstore.journal import Journal
from .localstore.vectors import LocalVectors
from .localstore.search import LocalSearch
from .models.recipe import HEADER, RecipeProvider, embed_messages, with_previous
from .models.spaces import canary_vector
from .search.searcher import Searcher
from .sync.runner import run_sync

MODES = ("hybrid", "semantic", "fulltext")
KS = (1, 5, 10)
DEPTH = 10            # sessions ranked per query
CANDIDATES = 100      # each leg's candidates: enough messages to rank DEPTH distinct sessions


class QueryFileError(ClaudeChatsError):
    """The query file cannot be read, or a line is not a valid query."""


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: tuple        # relevant session ids


MAX_QUERY_FILE = 64 << 20    # a query file is hand-made: anything larger is the wrong file


def load_queries(path):
    """The queries of a JSONL file; any malformed line is a one-line ``QueryFileError``.

    Only a regular file is read, and at most ``MAX_QUERY_FILE`` bytes of it: a FIFO would
    block forever, ``/dev/zero`` would fill the memory.
    """
    lines = _read_text(path, "query file").splitlines()
    queries, seen = [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        query = parse_query(line, f"{path}:{number}", default_id=f"q{number}")
        if query.id in seen:
            raise QueryFileError(f"{path}:{number}: duplicate id {query.id!r}")
        seen.add(query.id)
        queries.append(query)
    if not queries:
        raise QueryFileError(f"{path} holds no query (one JSON object per line: "
                             '{"query": "...", "relevant_session_ids": ["..."]})')
    return queries


def parse_query(line, where, default_id):
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise QueryFileError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise QueryFileError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    text, relevant = obj.get("query"), obj.get("relevant_session_ids")
    if not isinstance(text, str) or not text.strip():
        raise QueryFileError(f'{where}: "query" must be a non-empty string')
    if isinstance(relevant, str):
        relevant = [relevant]
    if not isinstance(relevant, list) or not relevant or not all(isinstance(s, str) and s for s in relevant):
        raise QueryFileError(f'{where}: "relevant_session_ids" must be a non-empty list of session ids')
    qid = obj.get("id", default_id)
    if not isinstance(qid, (str, int)) or isinstance(qid, bool):
        raise QueryFileError(f'{where}: "id" must be a string or a number')
    return Query(str(qid), text.strip(), tuple(dict.fromkeys(relevant)))


# -- metrics ---------------------------------------------------------------------------

def distinct(items):
    """``items`` in order, each once (hits -> the sessions they come from, best hit first)."""
    return list(dict.fromkeys(items))


def recall_at(ranked, relevant, k):
    """Fraction of ``relevant`` found in the first ``k`` of ``ranked``."""
    relevant = set(relevant)
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def reciprocal_rank(ranked, relevant):
    relevant = set(relevant)
    return next((1.0 / rank for rank, item in enumerate(ranked, 1) if item in relevant), 0.0)


def ndcg_at(ranked, relevant, k):
    """nDCG@k with binary relevance (LongMemEval's definition)."""
    relevant = set(relevant)
    gain = sum(1.0 / math.log2(rank + 1) for rank, item in enumerate(ranked[:k], 1) if item in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(k, len(relevant)) + 1))
    return gain / ideal if ideal else 0.0


def scores(ranked, relevant, ks=KS, depth=DEPTH):
    """The per-query metrics of one ranking."""
    out = {f"recall@{k}": recall_at(ranked, relevant, k) for k in ks}
    out["mrr"] = reciprocal_rank(ranked[:depth], relevant)
    out[f"ndcg@{depth}"] = ndcg_at(ranked, relevant, depth)
    return out


def mean(rows):
    """Column means of a list of metric dicts."""
    if not rows:
        return {}
    return {key: sum(r[key] for r in rows) / len(rows) for key in rows[0]}


# -- evaluation over a searcher ------------------------------------------------------

@dataclass
class ModeResult:
    mode: str
    metrics: dict = field(default_factory=dict)
    queries: int = 0
    misses: list = field(default_factory=list)      # queries whose relevant session missed the top DEPTH
    notes: list = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self):
        return {"mode": self.mode, "queries": self.queries, **{k: round(v, 4) for k, v in self.metrics.items()},
                "seconds": round(self.seconds, 3), "notes": self.notes}


def rank_sessions(searcher, text, mode, depth=DEPTH):
    """(ranked session ids, the result) of one search: the best hit of each session, in order."""
    result = searcher.search(text, mode=mode, limit=depth, per_session=1, context=0, max_chars=None,
                             candidates=CANDIDATES)
    return distinct(h["session_id"] for h in result["hits"]), result


def evaluate_mode(searcher, queries, mode, depth=DEPTH):
    """``ModeResult`` of ``queries`` in one search mode."""
    out, rows, notes = ModeResult(mode), [], {}
    started = time.perf_counter()
    for query in queries:
        ranked, result = rank_sessions(searcher, query.text, mode, depth)
        row = scores(ranked, query.relevant, depth=depth)
        rows.append(row)
        for note in result["notes"]:
            notes[note] = notes.get(note, 0) + 1
        if not set(query.relevant) & set(ranked[:depth]):
            out.misses.append(_miss(query, mode, result))
    out.seconds = time.perf_counter() - started
    out.metrics, out.queries = mean(rows), len(rows)
    out.notes = [f"{note} ({count} queries)" for note, count in notes.items()]
    return out


def _miss(query, mode, result, shown=3):
    return {"id": query.id, "query": query.text, "mode": mode, "relevant_session_ids": list(query.relevant),
            "first": [{"session_id": h["session_id"], "session_name": h["session_name"], "seq": h["seq"],
                       "role": h["role"], "text": h["text"][:300]} for h in result["hits"][:shown]]}


def evaluate(searcher, queries, modes=MODES, depth=DEPTH):
    """``[ModeResult]``, one per mode."""
    return [evaluate_mode(searcher, queries, mode, depth) for mode in modes]


def _read_text(path, what):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)   # a FIFO opens at once, then is refused
    except OSError as exc:
        raise QueryFileError(f"cannot read the {what} {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise QueryFileError(f"the {what} {path} is not a regular file")
        data = fh.read(MAX_QUERY_FILE + 1)
    if len(data) > MAX_QUERY_FILE:
        raise QueryFileError(f"the {what} {path} is larger than {MAX_QUERY_FILE >> 20} MiB: not a query file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QueryFileError(f"cannot read the {what} {path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None


def check_writable(path):
    """QueryFileError unless ``path`` can be written (its folder exists and is writable; it is not a
    folder), checked before an evaluation runs rather than after."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise QueryFileError(f"cannot write the misses to {path}: it is a folder")
    if not os.path.isdir(folder):
        raise QueryFileError(f"cannot write the misses to {path}: the folder {folder} does not exist")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise QueryFileError(f"cannot write the misses to {path}: permission denied")


def write_misses(path, results):
    """Write each mode's misses as JSON lines; returns how many were written."""
    count = 0
    try:
        with open(path, "w", encoding="utf-8") as fh:
            for result in results:
                for miss in result.misses:
                    fh.write(json.dumps(miss, ensure_ascii=False) + "\n")
                    count += 1
    except OSError as exc:
        raise QueryFileError(f"cannot write the misses to {path}: {exc.strerror or exc}") from None
    return count


# -- bakeoff -------------------------------------------------------------------------

def embed_journal(journal, provider):
    """Embed every message of ``journal`` into ``provider``'s space through the sync engine
    (no Postgres); returns (sync report, space id)."""
    settings = config.load(environ={}, path=os.devnull)   # no database: embed locally only
    space = LocalVectors(journal.conn)
    report = run_sync(settings, journal=journal, provider=provider, store=None, local=space, lock=False)
    if not report.ok:
        raise ClaudeChatsError("; ".join(report.errors))
    return report, space.space_id


def index_journal(journal, provider, labels=None, recipe=HEADER, batch=256):
    """Embed every message of ``journal`` with the recipe's text into the recipe's space, speakers named by
    ``labels`` ({role: name}; LoCoMo's benchmark); returns the space id. Not what sync embeds (``embed_journal``)."""
    space_id = vectors.ensure_space(journal.conn, RecipeProvider(provider, recipe).space, canary_vector(provider))
    messages = with_previous(journal.in_session_order())
    for start in range(0, len(messages), batch):
        part = messages[start:start + batch]
        with journal.conn:
            for message, chunks in zip(part, embed_messages(provider, part, labels, recipe)):
                vectors.write_message_vectors(journal.conn, space_id, message["id"], chunks)
    return space_id


def space_bytes(conn, space_id):
    """Bytes the space's vectors and chunk rows take in the journal (SQLite pages, via dbstat)."""
    table = f"ivf_{int(space_id)}"   # the index's tables (``localstore.ivf``): ivf_<n>_lists, _tail, ...
    vec = _pages(conn, "substr(tbl_name, 1, ?) = ?", (len(table) + 1, table + "_"))
    chunks, total = conn.execute("SELECT (SELECT count(*) FROM chunks WHERE space_id = ?), "
                                 "(SELECT count(*) FROM chunks)", (space_id,)).fetchall()[0]
    chunk_pages = _pages(conn, "tbl_name = 'chunks'", ())
    return int(vec + (chunk_pages * chunks / total if total else 0))


def _pages(conn, where, args):
    """Bytes of the pages of the tables and indexes of ``sqlite_master`` rows matching ``where``."""
    return conn.execute(f"SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN "
                        f"(SELECT name FROM sqlite_master WHERE {where})", args).fetchall()[0][0]


def scratch_copy(journal_path, folder):
    """A fresh journal in ``folder`` holding the sessions and messages of ``journal_path`` (no vectors)."""
    if not os.path.isfile(journal_path):
        raise ClaudeChatsError(f"no journal at {journal_path}: run `chats import` first")
    Journal.open(journal_path).close()   # in this version's layout first, as every command has it
    scratch = Journal.open(os.path.join(folder, "journal.db"))
    conn = scratch.conn
    conn.execute("ATTACH DATABASE ? AS source", (journal_path,))
    try:
        with conn:
            conn.execute("INSERT INTO main.sessions SELECT * FROM source.sessions")
            conn.execute("INSERT INTO main.session_numbers SELECT number, session_id FROM source.session_numbers")
            conn.execute("INSERT INTO main.messages (id, uuid, session, seq, role, kind, content, created_at, "
                         "message_id, is_sidechain, file_id, synced) SELECT id, uuid, session, seq, role, "
                         "kind, chats_text(content), created_at, message_id, is_sidechain, NULL, 0 "
                         "FROM source.messages")
    finally:
        conn.execute("DETACH DATABASE source")
    return scratch


@dataclass
class BakeoffRow:
    model: str
    dimensions: int
    messages: int = 0
    chunks: int = 0
    embed_seconds: float = 0.0
    storage_bytes: int = 0
    results: list = field(default_factory=list)     # [ModeResult]
    notes: list = field(default_factory=list)

    def metric(self, mode, name="recall@10"):
        return next((r.metrics.get(name) for r in self.results if r.mode == mode), None)

    def as_dict(self):
        return {"model": self.model, "dimensions": self.dimensions, "messages": self.messages,
                "chunks": self.chunks, "embed_seconds": round(self.embed_seconds, 2),
                "storage_bytes": self.storage_bytes, "modes": [r.as_dict() for r in self.results],
                "notes": self.notes}


def bakeoff(journal_path, queries, providers, modes=("semantic", "hybrid"), folder=None, depth=DEPTH):
    """One ``BakeoffRow`` per provider: its own space built from the journal's messages, then ``queries``.

    ``providers`` are ``(label, factory)`` pairs; each provider is opened,
    used and closed in turn. The journal at ``journal_path`` is only read.
    """
    owned = folder is None
    folder = folder or tempfile.mkdtemp(prefix="chats-bakeoff-")
    rows = []
    try:
        scratch = scratch_copy(journal_path, folder)
        try:
            for label, factory in providers:
                rows.append(_bakeoff_one(scratch, label, factory, queries, modes, depth))
        finally:
            scratch.close()
    finally:
        if owned:
            shutil.rmtree(folder, ignore_errors=True)
    return rows


def _bakeoff_one(scratch, label, factory, queries, modes, depth):
    provider = factory()
    try:
        started = time.perf_counter()
        report, space_id = embed_journal(scratch, provider)
        row = BakeoffRow(label, int(provider.dimensions), report.embedded, report.chunks,
                         time.perf_counter() - started, space_bytes(scratch.conn, space_id))
        searcher = Searcher(LocalSearch(scratch), None, lambda: provider)
        row.results = evaluate(searcher, queries, modes, depth)
        row.notes = [n for r in row.results for n in r.notes]
        return row
    finally:
        provider.close()


# -- output ----------------------------------------------------------------------------

def metric_names(depth=DEPTH, ks=KS):
    return [f"recall@{k}" for k in ks] + ["mrr", f"ndcg@{depth}"]


def table(headers, rows):
    """A plain-text table (Markdown pipe syntax) of ``rows`` (lists of cells)."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda row: "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |"  # noqa: E731
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, cells)])


def results_table(results, depth=DEPTH):
    names = metric_names(depth)
    return table(["mode", "queries", *names], [[r.mode, r.queries, *(f"{r.metrics.get(n, 0):.3f}" for n in names)]
                                                for r in results])


def bakeoff_table(rows, modes, depth=DEPTH):
    headers = ["model", "dims", *(f"{m} R@{depth}" for m in modes), *(f"{m} MRR" for m in modes),
               "embed s", "msgs/s", "storage", "notes"]
    body = []
    for row in rows:
        rate = row.messages / row.embed_seconds if row.embed_seconds else 0
        body.append([row.model, row.dimensions, *(_fmt(row.metric(m, f"recall@{depth}")) for m in modes),
                     *(_fmt(row.metric(m, "mrr")) for m in modes), f"{row.embed_seconds:.1f}", f"{rate:.0f}",
                     human_bytes(row.storage_bytes), f"{row.chunks} chunks of {row.messages} messages"
                     + ("; " + "; ".join(row.notes) if row.notes else "")])
    return table(headers, body)


def _fmt(value):
    return "-" if value is None else f"{value:.3f}"


def human_bytes(count):
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GB"
