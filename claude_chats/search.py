"""One search API over both stores: modes, filters, fusion, result shape, fallback.

``Searcher(local, remote, provider_factory).search(query, limit=5, mode="hybrid", ...)``
returns the result dict that the MCP tool and ``chats search --json`` print::

    {"query", "mode", "modes_run": ["fulltext", "semantic"], "source": "postgres" | "local",
     "notes": [why a store or a leg was skipped], "hits": [Hit.as_dict()...],
     "timings_ms": {"embed", "search"}, "truncated"}

Modes: ``hybrid`` (full-text and vector legs, each taking its top
``candidates``, fused with weighted Reciprocal Rank Fusion: k=60 per leg,
``LEG_WEIGHTS`` per leg), ``semantic`` (vector leg only) and ``fulltext`` (the
query taken as text).

The full-text leg (both stores) matches a message with *any* of the query's
words (a question rarely shares every word with its answer), ranked bm25-like
(rare words weigh more, so a message with all of them usually comes first); a
message then adds ``NEIGHBOUR_WEIGHT`` x the full-text scores of the messages
within ``NEIGHBOUR_SPAN`` of it in its session (answers often sit next to the
turn that names the topic). A full-text query written in web-search syntax
("phrases", ``or``, ``-word``) is read as such: all its words, then any of them
when no message has all. BENCHMARKS.md has the measurements behind each choice.

A store ("backend") answers with the same small interface (see ``Backend``);
``claude_chats.sync.pgsearch`` (Postgres: both legs and the fusion in one SQL
statement) and ``claude_chats.localstore.search`` (the journal: FTS5 bm25 and
sqlite-vec, fused here by ``fuse``) implement it. The searcher asks Postgres
first when it is configured; when Postgres cannot be reached it answers from
the journal in the same call and says why.
"""

import json
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

from . import transcript
from .localstore import fts
from .errors import (ConfigError, PostgresUnavailable, ProviderError, SearchError, SessionNotFound,
                     SpaceMismatchError)

MODES = ("hybrid", "semantic", "fulltext")
LEGS = ("fulltext", "semantic")
RRF_K = 60
CANDIDATES = 40        # each leg's top candidates before fusion
PER_SESSION = 2        # at most this many hits from one session
CONTEXT = 2            # neighbouring messages either side of a hit
TEXT_CHARS = 700       # matched text per hit
NEIGHBOUR_CHARS = 200  # each neighbouring message
MAX_CHARS = 12_000     # the whole result, as JSON
ROLES = ("user", "assistant", "system")
LEG_WEIGHTS = {"fulltext": 1.0, "semantic": 0.5}   # weighted RRF: the vector leg counts half
NEIGHBOUR_SPAN = 2        # messages either side whose full-text score a message borrows
NEIGHBOUR_WEIGHT = 0.35   # ... at this fraction (0: none)
FULLTEXT_POOL = 5         # x a leg's candidates: the top full-text matches that lend to their neighbours
MATCH_ROWS = 2000         # "any word" matches at most about this many messages (see ``selective``)
MATCHES = ("all", "any")


@dataclass(frozen=True)
class Filters:
    """What a search is restricted to. ``Filters.build`` validates typed input."""

    project_path: str | None = None    # exact folder, or any sub-folder of it
    session_id: str | None = None
    role: str | None = None            # "user", "assistant" or "system"
    since: datetime | None = None      # UTC, inclusive
    until: datetime | None = None      # UTC, exclusive
    include_subagents: bool = True
    kinds: tuple = transcript.DEFAULT_KINDS

    @classmethod
    def build(cls, project_path=None, session_id=None, role=None, since=None, until=None,
              include_subagents=True, kinds=None):
        if role is not None and role not in ROLES:
            raise SearchError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        kinds = tuple(kinds) if kinds else transcript.DEFAULT_KINDS
        unknown = [k for k in kinds if k not in transcript.KINDS]
        if unknown:
            raise SearchError(f"unknown kind(s) {', '.join(map(repr, unknown))}; "
                              f"choose from: {', '.join(transcript.KINDS)}")
        project = project_path.rstrip("/") or "/" if project_path else None
        return cls(project, session_id or None, role, parse_time(since, "since"),
                   parse_time(until, "until", end=True), bool(include_subagents), kinds)


def parse_time(value, name, end=False):
    """An ISO date or date-time as an aware UTC datetime; a bare date ``until`` covers its whole day."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        text = str(value).strip()
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise SearchError(f"{name}: {value!r} is not an ISO date (2025-01-31) or date-time "
                              "(2025-01-31T14:00:00Z)") from None
        if end and len(text) == 10:
            moment += timedelta(days=1)
    if isinstance(moment, date) and not isinstance(moment, datetime):
        moment = datetime(moment.year, moment.month, moment.day)
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def iso(moment):
    """Timestamps as the journal stores them: ``2025-01-31T14:00:00.000Z``."""
    if moment is None or isinstance(moment, str):
        return moment
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class Plan:
    """What a backend runs: the legs, their inputs, and the filters."""

    text: str
    legs: tuple
    filters: Filters
    vector: object = None          # float32 query vector (semantic leg)
    space_id: object = None        # the backend's id of the configured embedding space
    candidates: int = CANDIDATES
    rrf_k: dict = field(default_factory=lambda: {leg: RRF_K for leg in LEGS})
    match: str = "all"             # full text: "all" words (web-search syntax), or "any" word
    weights: dict = field(default_factory=lambda: dict(LEG_WEIGHTS))   # leg -> weight in the fusion
    neighbours: float = NEIGHBOUR_WEIGHT   # what a full-text match lends the messages around it


@dataclass
class Candidate:
    """One message found by one or more legs. ``key`` is the backend's message id."""

    key: object
    session_id: str
    ranks: dict = field(default_factory=dict)    # leg -> 1-based rank
    scores: dict = field(default_factory=dict)   # leg -> bm25 / ts_rank_cd / cosine similarity
    score: float = 0.0                           # fused (RRF) score
    chunk: tuple | None = None                   # (start_char, end_char) of the best vector chunk


def fuse(legs, rrf_k, weights=None):
    """Weighted Reciprocal Rank Fusion of ranked legs: ``{leg: [Candidate]}`` (best first) -> [Candidate].

    score = sum over legs of weight_leg / (k_leg + rank) (``weights``: leg -> weight, 1 when
    missing). Ties go to the better best rank, then to the full-text rank.
    """
    fused, weights = {}, weights or {}
    for leg, ranked in legs.items():
        for rank, found in enumerate(ranked, 1):
            hit = fused.setdefault(found.key, Candidate(found.key, found.session_id))
            hit.ranks[leg] = rank
            hit.scores[leg] = found.scores.get(leg)
            hit.score += weights.get(leg, 1.0) / (rrf_k[leg] + rank)
            hit.chunk = hit.chunk or found.chunk
    return sorted(fused.values(), key=_fusion_order)


def _fusion_order(c):
    return (-c.score, min(c.ranks.values()), c.ranks.get("fulltext", 1 << 30))


def cap_per_session(candidates, per_session, limit):
    """The best ``limit`` candidates, at most ``per_session`` from any one session."""
    taken, out = {}, []
    for c in candidates:
        if per_session and taken.get(c.session_id, 0) >= per_session:
            continue
        taken[c.session_id] = taken.get(c.session_id, 0) + 1
        out.append(c)
        if len(out) == limit:
            break
    return out


# -- rendering -------------------------------------------------------------------------

STOPWORDS = frozenset("""a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so some
such than that the their theirs them themselves then there these they this those through to too under until
up very was we were what when where which while who whom why will with you your yours yourself yourselves
""".split())


_SYNTAX = re.compile(r'"|(?:^|\s)-\w|\bor\b')   # web-search syntax: a phrase, an excluded word, ``or``


def query_terms(text):
    """The words of a query that matter for full text (English stopwords dropped unless nothing else is left)."""
    words = re.findall(r"\w+", text or "", re.UNICODE)
    kept = [w for w in words if w.lower() not in STOPWORDS]
    return kept or words


def any_words(text):
    """The words an any-word full-text query looks for (both stores): the query's terms, split
    and deduplicated as the journal's FTS5 tokenizer splits them."""
    return fts.terms(" ".join(query_terms(text)))


def selective(words, counts, total, budget=MATCH_ROWS):
    """(words, "any" or "all"): what an any-word query matches on, given how many messages hold
    each word (``counts``, exact or estimated, capped or not) out of ``total``.

    All the words, unless together they would match more than ``budget`` messages of a larger
    store: then the rarest first while the sum stays within ``budget`` (ties in query order); when
    even the rarest is in more than ``budget``, every word is required ("all"). Words that
    common weigh little in bm25 and would make each search score a large part of the store.
    Both stores choose the same way.
    """
    capped = [min(c, budget + 1) for c in counts]
    if total <= budget or sum(capped) <= budget:
        return list(words), "any"
    kept, used = [], 0
    for i in sorted(range(len(words)), key=lambda i: (capped[i], i)):
        if used + capped[i] > budget:
            break
        kept.append(i)
        used += capped[i]
    return ([words[i] for i in sorted(kept)], "any") if kept else (list(words), "all")


def excerpt(content, terms=(), chunk=None, budget=TEXT_CHARS):
    """``content`` trimmed to ``budget`` characters around the matched chunk or the first matched term."""
    start, end = chunk if chunk else (0, len(content))
    region = content[start:end]
    if len(" ".join(region.split())) <= budget:
        return _marked(" ".join(region.split()), start > 0, end < len(content))
    focus = _first_term(region, terms)
    lead = max(0, focus - budget // 4)
    window = " ".join(region[lead:lead + budget * 2].split())[:budget - 2]
    return _marked(window, start + lead > 0, True)


def _first_term(text, terms):
    stems = [re.escape(t.lower()[:max(3, len(t) - 3)]) for t in terms if t]
    if not stems:
        return 0
    found = re.search(r"\b(?:" + "|".join(stems) + ")", text, re.IGNORECASE)
    return found.start() if found else 0


def _marked(text, cut_before, cut_after):
    return ("…" if cut_before else "") + text + ("…" if cut_after else "")


def shorten(text, limit):
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:max(1, limit - 1)] + "…"


@dataclass
class Hit:
    """One search hit: the stored message, where it sits, and how it was found."""

    candidate: Candidate
    row: dict          # backend.hydrate row: session_id, session_name, project_path, git_branch, role, kind,
                       # seq, timestamp, uuid, content, is_subagent
    context: list      # neighbours: [{"seq", "role", "kind", "text"}]
    source: str

    def as_dict(self, terms=(), text_chars=TEXT_CHARS, neighbour_chars=NEIGHBOUR_CHARS):
        row, c = self.row, self.candidate
        chunk = {"start": c.chunk[0], "end": c.chunk[1]} if c.chunk else None
        return {
            "session_id": row["session_id"], "session_name": row["session_name"],
            "project_path": row["project_path"], "git_branch": row["git_branch"],
            "role": row["role"], "kind": row["kind"], "seq": row["seq"], "timestamp": iso(row["timestamp"]),
            "uuid": row["uuid"], "is_subagent": bool(row["is_subagent"]),
            "text": excerpt(row["content"], terms, c.chunk, text_chars), "chars": len(row["content"]),
            "chunk": chunk,
            "context": [{**n, "text": shorten(n["text"], neighbour_chars)} for n in self.context]
            if neighbour_chars else [],
            "ranks": dict(c.ranks), "scores": {k: _round(v) for k, v in c.scores.items()},
            "score": _round(c.score), "source": self.source,
        }


def _round(value):
    return None if value is None else round(float(value), 6)


def render(head, hits, terms, max_chars):
    """The result dict, shrinking text and then dropping the last hits until it fits ``max_chars``."""
    text_chars, neighbour_chars = TEXT_CHARS, NEIGHBOUR_CHARS
    while True:
        result = {**head, "hits": [h.as_dict(terms, text_chars, neighbour_chars) for h in hits],
                  "truncated": head.get("truncated", False)}
        if not max_chars or len(json.dumps(result, ensure_ascii=False, default=str)) <= max_chars:
            return result
        head = {**head, "truncated": True}
        if text_chars > 160:
            text_chars, neighbour_chars = int(text_chars * 0.6), int(neighbour_chars * 0.6)
        elif neighbour_chars:
            neighbour_chars = 0
        elif len(hits) > 1:
            hits = hits[:-1]
        else:
            return result


# -- the searcher ------------------------------------------------------------------------


class Backend:
    """What a store implements for the searcher (documentation; stores duck-type it).

    ``source``: "postgres" or "local".
    ``space(key)`` -> dict(id, key, provider, model, dimensions, options, canary: float32 array or None,
    vectors: bool) or None;
    ``spaces()`` -> such dicts of every space holding vectors;
    ``candidates(plan)`` -> [Candidate] fused and ordered (a ``Plan`` with one leg: that leg's order);
    ``hydrate(keys)`` -> {key: row} (see ``Hit.row``);
    ``neighbours([(session_id, seq)], span)`` -> {(session_id, seq): [{"seq", "role", "kind", "text"}]};
    ``session(session_id)``, ``messages(session_id, start, end, kinds, limit)``,
    ``sessions(limit, project_path, include_subagents)`` for the conversation tools.
    Losing Postgres raises ``PostgresUnavailable`` from any of them.
    """

    source = None


@dataclass
class Request:
    """A validated search request (see ``Searcher.search`` for the arguments)."""

    query: str
    limit: int = 5
    mode: str = "hybrid"
    filters: Filters = field(default_factory=Filters)
    per_session: int = PER_SESSION
    context: int = CONTEXT
    candidates: int = CANDIDATES
    rrf_k: dict = field(default_factory=lambda: {leg: RRF_K for leg in LEGS})
    max_chars: int | None = MAX_CHARS
    weights: dict = field(default_factory=lambda: dict(LEG_WEIGHTS))
    neighbours: float = NEIGHBOUR_WEIGHT
    match: str | None = None       # None: "any" word, web-search syntax when the query uses it (full text)
    vector: object = None
    embed_ms: float = 0.0

    @classmethod
    def build(cls, query, limit=5, mode="hybrid", per_session=PER_SESSION, context=CONTEXT, candidates=None,
              rrf_k=RRF_K, max_chars=MAX_CHARS, weights=None, neighbours=NEIGHBOUR_WEIGHT, match=None,
              **filters):
        if mode not in MODES:
            raise SearchError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if not (query or "").strip():
            raise SearchError("the query is empty: say what to look for")
        if match not in (None, *MATCHES):
            raise SearchError(f"match must be one of {', '.join(MATCHES)}, not {match!r}")
        limit = max(1, min(int(limit), 100))
        ks = rrf_k if isinstance(rrf_k, dict) else {leg: rrf_k for leg in LEGS}
        ks = {leg: int(ks.get(leg, RRF_K)) for leg in LEGS}
        if min(ks.values()) < 1:
            raise SearchError("rrf_k must be a positive integer")
        weights = {leg: float((weights or LEG_WEIGHTS).get(leg, 1.0)) for leg in LEGS}
        if min(weights.values()) < 0 or float(neighbours) < 0:
            raise SearchError("leg weights and the neighbours' weight must not be negative")
        candidates = max(int(candidates or CANDIDATES), limit * 4)
        return cls(query.strip(), limit, mode, Filters.build(**filters), max(0, int(per_session or 0)),
                   max(0, min(int(context), 10)), candidates, ks, max_chars, weights, float(neighbours), match)


class Searcher:
    """Search, read and list conversations across Postgres (``remote``) and the journal (``local``).

    ``remote`` is a ``pgsearch.PgLink`` (or None when Postgres is not configured):
    ``remote.backend()`` gives a backend or raises ``PostgresUnavailable`` fast.
    ``local`` is a journal backend (or None). ``provider_factory()`` returns the
    embedding provider; it is called on the first search that needs vectors.
    """

    def __init__(self, local=None, remote=None, provider_factory=None, redact=False):
        self.local, self.remote, self.provider_factory = local, remote, provider_factory
        self.redact = redact  # secrets out of queries sent to a remote embedding API
        self._provider = None
        self._canaries = {}
        self._lock = threading.RLock()

    def _outgoing(self, query):
        """The query as the provider may see it: redacted when it leaves the machine."""
        from .models import is_remote

        if self.redact and is_remote(self._provider):
            from .redact import redact
            return redact(query)
        return query

    def warm(self):
        """Load what the first search would need: the embedding model and the journal's vector index."""
        with self._lock:
            try:
                provider = self._get_provider()
            except (ProviderError, ConfigError):
                return  # the first search says why
            if self.local is not None and hasattr(self.local, "warm"):
                self.local.warm(provider.space.key)

    def close(self):
        for thing in (self.remote, self.local, self._provider):
            if thing is not None and hasattr(thing, "close"):
                thing.close()

    # -- searching -------------------------------------------------------------------

    def search(self, query, **options):
        """Search the stored conversations; ``options`` are ``Request.build``'s and ``Filters.build``'s."""
        request = Request.build(query, **options)
        with self._lock:
            return self._each_backend(lambda backend, notes: self._search(backend, request, notes))

    def _each_backend(self, action, missing_ok=False):
        """``action(backend, notes)`` on Postgres, else on the journal (``missing_ok``: also when
        Postgres does not have the session yet)."""
        notes = []
        backends = list(self._backends(notes))
        for index, backend in enumerate(backends):
            before = len(notes)
            try:
                return action(backend, notes)
            except PostgresUnavailable as exc:
                del notes[before:]  # what the lost store said no longer applies
                notes.append(f"Postgres unreachable, answered from the local journal: {exc}")
            except SessionNotFound:
                if not missing_ok or index == len(backends) - 1:
                    raise
                notes.append("this session is not in Postgres (not synced yet): read from the local journal")
        raise PostgresUnavailable("no store to answer from: " + "; ".join(notes or ["none configured"]))

    def _backends(self, notes):
        if self.remote is not None:
            try:
                yield self.remote.backend()
            except PostgresUnavailable as exc:
                notes.append(f"Postgres unreachable, answered from the local journal: {exc}")
        if self.local is not None:
            yield self.local

    def _search(self, backend, request, notes):
        started = time.perf_counter()
        legs, vector, space_id = self._legs(backend, request, notes)
        searching = time.perf_counter()
        # web-search syntax asks for exactly these words: nothing is lent to a message without them
        syntax = request.match is None and request.mode == "fulltext" and _SYNTAX.search(request.query)
        plan = Plan(request.query, legs, request.filters, vector, space_id, request.candidates, request.rrf_k,
                    "all" if syntax else request.match or "any", request.weights, 0 if syntax else request.neighbours)
        found = backend.candidates(plan)
        if not found and request.match is None and plan.match == "all" and len(query_terms(request.query)) > 1:
            plan.match = "any"
            found = backend.candidates(plan)
            if found:
                notes.append("no message has all the words: these have some of them")
        picked = cap_per_session(found, request.per_session, request.limit)
        rows = backend.hydrate([c.key for c in picked])
        places = [(rows[c.key]["session_id"], rows[c.key]["seq"]) for c in picked if c.key in rows]
        context = backend.neighbours(places, request.context) if request.context and places else {}
        hits = [Hit(c, rows[c.key], context.get((rows[c.key]["session_id"], rows[c.key]["seq"]), []),
                    backend.source) for c in picked if c.key in rows]
        done = time.perf_counter()
        head = {"query": request.query, "mode": request.mode, "modes_run": list(legs), "source": backend.source,
                "notes": list(notes), "timings_ms": {"embed": round(request.embed_ms, 2),
                                                     "search": round((done - searching) * 1e3, 2),
                                                     "total": round((done - started) * 1e3, 2)}}
        if not hits:
            head["notes"].append(_nothing_found(request))
        return render(head, hits, query_terms(request.query) if "fulltext" in legs else (), request.max_chars)

    def _legs(self, backend, request, notes):
        """The legs to run on ``backend``, the query vector and the space id (None, None for full text)."""
        if request.mode == "fulltext":
            return ("fulltext",), None, None
        space = self._space(backend, request.mode, notes)
        if space is None:
            return ("fulltext",), None, None
        if request.vector is None:
            started = time.perf_counter()
            try:
                request.vector = self._provider.embed_query(self._outgoing(request.query))
            except ProviderError as exc:
                if request.mode == "semantic":
                    raise SearchError(f"the embedding model failed, semantic search cannot run: {exc}. "
                                      "Try mode='fulltext'.") from None
                notes.append(f"the embedding model failed, hybrid ran full text only: {exc}")
                return ("fulltext",), None, None
            request.embed_ms = (time.perf_counter() - started) * 1e3
        legs = ("semantic",) if request.mode == "semantic" else LEGS
        return legs, request.vector, space["id"]

    def _space(self, backend, mode, notes):
        """The backend's row of the configured space, checked against the model; None: full text only."""
        if not backend.spaces():  # nothing embedded yet: no need to load a model to find that out
            return self._no_vectors(backend, mode, notes, "any embedding model")
        try:
            provider = self._get_provider()
            configured = provider.space           # a remote model may be asked its dimensions here
        except (ProviderError, ConfigError) as exc:
            return self._unavailable(mode, notes, exc)
        row = backend.space(configured.key)
        if row is None or not row["vectors"]:
            from .models.recipe import same_model

            others = [_space_of(s) for s in backend.spaces() if s["key"] != configured.key]
            rebuilding = any(same_model(s, configured) for s in others)   # another embed_text: sync re-embeds
            if others and not rebuilding:
                raise _mismatch(others, configured, "no vectors were stored with the configured model")
            return self._no_vectors(backend, mode, notes, configured.describe(), rebuilding)
        try:
            self._check_canary(backend.source, row, provider)   # embeds the canary sentence once
        except ProviderError as exc:
            return self._unavailable(mode, notes, exc)
        return row

    @staticmethod
    def _unavailable(mode, notes, exc):
        """The model cannot be reached: semantic search fails in one line, hybrid runs full text with a note."""
        if mode == "semantic":
            raise SearchError(f"semantic search needs the embedding model, which is unavailable: {exc}. "
                              "Use mode='fulltext', or fix the model (`chats models check`).") from None
        notes.append(f"embedding model unavailable, hybrid ran full text only: {exc}")

    @staticmethod
    def _no_vectors(backend, mode, notes, model, rebuilding=False):
        what = (f"vectors are being rebuilt for {model} in the {backend.source} store (the embedded text "
                f"changed)" if rebuilding else f"no vectors for {model} in the {backend.source} store yet")
        if mode == "semantic":
            raise SearchError(f"{what}: run `chats sync` to embed the conversations, or use mode='fulltext'.")
        notes.append(f"{what} (run `chats sync`): hybrid ran full text only")

    def _get_provider(self):
        if self._provider is None:
            if self.provider_factory is None:
                raise ConfigError("no embedding provider configured")
            self._provider = self.provider_factory()
        return self._provider

    def _check_canary(self, source, row, provider):
        """Refuse vectors the configured model does not reproduce (checked once per stored canary)."""
        from .models import check_canary

        canary = row["canary"]
        if canary is None:
            return
        key = (source, row["id"], canary.tobytes())
        if key not in self._canaries:
            try:
                check_canary(_space_of(row), canary, provider)
                self._canaries[key] = None
            except SpaceMismatchError as exc:
                self._canaries[key] = exc
        if self._canaries[key] is not None:
            raise self._canaries[key]

    # -- reading and listing ------------------------------------------------------------

    def conversation(self, session_id, start_seq=None, end_seq=None, limit=50, kinds=None,
                     max_chars=20_000, message_chars=4_000):
        """A page of one conversation with its totals; ``next_start_seq`` when more follows."""
        kinds = tuple(kinds) if kinds else CONVERSATION_KINDS
        with self._lock:
            return self._each_backend(lambda backend, notes: _page(
                backend, notes, session_id, start_seq, end_seq, limit, kinds, max_chars, message_chars),
                missing_ok=True)

    def recent_sessions(self, limit=10, project_path=None, include_subagents=False):
        """The most recent conversations, newest first."""
        project = project_path.rstrip("/") or "/" if project_path else None
        with self._lock:
            return self._each_backend(lambda backend, notes: {
                "source": backend.source, "notes": list(notes),
                "sessions": [_session_dict(s) for s in backend.sessions(limit, project, include_subagents)]})


CONVERSATION_KINDS = tuple(k for k in transcript.KINDS if k != transcript.THINKING)


def open_searcher(settings=None, journal_path=None, use_postgres=True, wait=1.5, retry_after=5.0):
    """A ``Searcher`` over the configured stores: the journal, and Postgres when ``database_url`` is set.

    Postgres connects in the background (see ``pgsearch.PgLink``); the embedding
    provider is constructed on the first search that needs it.
    """
    from . import config
    from .localstore.search import LocalSearch

    settings = settings or config.load()
    local = LocalSearch.open(journal_path)
    remote = None
    if use_postgres and settings.database_url:
        from .sync.pgsearch import PgLink

        remote = PgLink(settings.database_url, settings.allow_insecure_remote, wait=wait, retry_after=retry_after)
        remote.start()
    return Searcher(local, remote, lambda: _provider(settings), redact=bool(settings.redact))


def _provider(settings):
    from .models import embedder

    return embedder(settings)   # the configured embedded text: the space sync writes


def _page(backend, notes, session_id, start_seq, end_seq, limit, kinds, max_chars, message_chars):
    session = backend.session(session_id)
    start = 0 if start_seq is None else max(0, int(start_seq))
    rows = backend.messages(session_id, start, end_seq, kinds, max(1, min(int(limit), 500)) + 1)
    more = len(rows) > limit
    rows, used, messages = rows[:limit], 0, []
    for row in rows:
        text = row["content"] if len(row["content"]) <= message_chars else (
            row["content"][:message_chars] + f"… [{len(row['content']) - message_chars} more characters]")
        if messages and used + len(text) > max_chars:
            more = True
            break
        used += len(text) + 80
        messages.append({"seq": row["seq"], "role": row["role"], "kind": row["kind"],
                         "timestamp": iso(row["timestamp"]), "text": text})
    last = messages[-1]["seq"] if messages else None
    return {"source": backend.source, "notes": list(notes), "session": _session_dict(session),
            "messages": messages, "returned": len(messages),
            "next_start_seq": last + 1 if more and last is not None else None}


def _session_dict(row):
    return {**row, "started_at": iso(row.get("started_at")), "last_at": iso(row.get("last_at"))}


def _space_of(row):
    from .models import Space

    options = row.get("options") or {}
    if isinstance(options, str):
        options = json.loads(options or "{}")
    return Space(row["provider"], row["model"], int(row["dimensions"]), options)


def _mismatch(stored, configured, detail):
    from .models.spaces import mismatch_error

    return mismatch_error(stored, configured, detail)


def _nothing_found(request):
    tips = {"fulltext": "try other words, fewer words, or mode='semantic' with a sentence that would "
                        "appear in the conversation",
            "semantic": "rephrase as a sentence that would appear in the conversation, or try mode='fulltext' "
                        "for exact names",
            "hybrid": "try other words, or widen the filters"}
    narrowed = [name for name, value in (("project_path", request.filters.project_path),
                                         ("session_id", request.filters.session_id),
                                         ("role", request.filters.role), ("since", request.filters.since),
                                         ("until", request.filters.until)) if value]
    widen = f"; drop or widen the filters ({', '.join(narrowed)})" if narrowed else ""
    return f"nothing found: {tips[request.mode]}{widen}"


__all__ = ["STOPWORDS", "CANDIDATES", "Candidate", "Filters", "Hit", "LEG_WEIGHTS", "MODES", "NEIGHBOUR_SPAN",
           "NEIGHBOUR_WEIGHT", "PER_SESSION", "Plan", "RRF_K", "Request",
           "Searcher", "cap_per_session", "open_searcher", "excerpt", "fuse", "query_terms", "render"]
