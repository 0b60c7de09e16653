"""One search API over both stores: modes, result shape, rendering, fallback, conversation pages.

``Searcher(local, remote, provider_factory).search(query, limit=5, mode="hybrid", ...)``
returns the result dict that the MCP tool and ``chats search --json`` print::

    {"query", "mode", "modes_run": ["fulltext", "semantic"], "source": "postgres" | "local",
     "notes": [why a store or a leg was skipped], "hits": [Hit.as_dict()...],
     "timings_ms": {"embed", "search"}, "truncated"}

Modes: ``hybrid`` (full-text and vector legs, each taking its top
``candidates``, fused with weighted Reciprocal Rank Fusion: k=60 per leg,
``LEG_WEIGHTS`` per leg), ``semantic`` (vector leg only) and ``fulltext`` (the
query taken as text). ``search.core`` holds what the stores share.

A store ("backend", ``core.Backend``) is given to the searcher; it imports none.
The searcher asks Postgres first when it is configured; when Postgres cannot be
reached it answers from the journal in the same call and says why.
``claude_chats.stores.open_searcher`` builds one over the configured stores.
"""

import json
import re
import threading
import time
from dataclasses import dataclass, field, replace

from .. import transcript
from ..errors import ConfigError, PostgresUnavailable, ProviderError, SearchError, SessionNotFound, SpaceMismatchError
from ..models import Space, check_canary, is_remote
from ..models.recipe import same_model, skipped_kinds
from ..models.spaces import mismatch_error
from ..redact import redact, redacted_span
from ..times import iso
from . import bounds
from .core import (
    CANDIDATES,
    CONTEXT,
    COVERAGE_NOTE,
    LEG_WEIGHTS,
    LEGS,
    MATCHES,
    MAX_CHARS,
    MODES,
    NEIGHBOUR_CHARS,
    NEIGHBOUR_WEIGHT,
    PER_SESSION,
    RRF_K,
    SYNTAX,
    TEXT_CHARS,
    Candidate,
    Filters,
    Plan,
    cap_per_session,
    check_origin,
    query_terms,
    shorten,
)
from .guard import Pending, ProviderGuard, networked

# -- rendering -------------------------------------------------------------------------

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


@dataclass
class Hit:
    """One search hit: the stored message, where it sits, and how it was found."""

    candidate: Candidate
    row: dict          # backend.hydrate row: session_id, session_name, project_path, git_branch, role, kind,
                       # seq, timestamp, uuid, content, is_subagent
    context: list      # neighbours: [{"seq", "role", "kind", "text"}]
    source: str

    def as_dict(self, terms=(), text_chars=TEXT_CHARS, neighbour_chars=NEIGHBOUR_CHARS, name_chars=bounds.NAME_CHARS):
        row, c = self.row, self.candidate
        chunk = {"start": c.chunk[0], "end": c.chunk[1]} if c.chunk else None
        return {
            "session_id": row["session_id"], "session_name": bounds.cut(row["session_name"], name_chars),
            "project_path": bounds.cut(row["project_path"], name_chars),
            "git_branch": bounds.cut(row["git_branch"], name_chars),
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
    """The result dict within ``max_chars`` (as JSON): the text of the hits shrunk first, then their
    neighbours, their long names, then the last hits dropped; ``bounds.squeeze`` if even that is too much."""
    text_chars, neighbour_chars, name_chars = TEXT_CHARS, NEIGHBOUR_CHARS, bounds.NAME_CHARS
    head = {**head, "query": bounds.cut(head["query"], bounds.QUERY_ECHO),
            "notes": [bounds.cut(n, bounds.NOTE_CHARS) for n in head["notes"]]}
    while True:
        result = {**head, "hits": [h.as_dict(terms, text_chars, neighbour_chars, name_chars) for h in hits],
                  "truncated": head.get("truncated", False)}
        if not max_chars or bounds.size(result) <= max_chars:
            return result
        head = {**head, "truncated": True}
        if text_chars > 160:
            text_chars, neighbour_chars = int(text_chars * 0.6), int(neighbour_chars * 0.6)
        elif neighbour_chars:
            neighbour_chars = 0
        elif name_chars > 40:
            name_chars //= 2
        elif len(hits) > 1:
            hits = hits[:-1]
        else:
            return bounds.squeeze(result, max_chars)


# -- the searcher ------------------------------------------------------------------------


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
    query_chars: int = 0           # the length of a query cut to ``bounds.MAX_QUERY_CHARS`` (0: not cut)
    vector: object = None
    embed_ms: float = 0.0
    until: float | None = None     # monotonic time by which the provider must have answered (MCP)

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
        text, cut_from = bounds.cap_query(query.strip())
        return cls(text, limit, mode, Filters.build(**filters), max(0, int(per_session or 0)),
                   max(0, min(int(context), 10)), candidates, ks, max_chars, weights, float(neighbours), match,
                   cut_from)


class Searcher:
    """Search, read and list conversations across Postgres (``remote``) and the journal (``local``).

    ``remote`` is a ``pgstore.search.PgLink`` (or None when Postgres is not configured):
    ``remote.backend()`` gives a backend or raises ``PostgresUnavailable`` fast.
    ``local`` is a journal backend (or None). ``provider_factory()`` returns the
    embedding provider; it is called on the first search that needs vectors.
    """

    def __init__(self, local=None, remote=None, provider_factory=None, redact=False, redact_results=False,
                 provider_deadline=None):
        self.local, self.remote, self.provider_factory = local, remote, provider_factory
        self.redact = redact  # secrets out of queries sent to a remote embedding API (and sync redacts Postgres)
        # secrets out of what is returned (the MCP tools: results go into the model's context), from either store
        self.redact_results = redact_results
        # seconds a search waits for a network embedding provider (MCP), None: as long as it takes
        self._guard = ProviderGuard(provider_factory, provider_deadline)
        self._canaries = {}
        self._lock = threading.RLock()

    def _outgoing(self, query):
        """The query as the provider may see it: redacted when it leaves the machine."""
        if self.redact and is_remote(self._guard.provider):
            return redact(query)
        return query

    def warm(self):
        """Load what the first search would need: the embedding model and the journal's vector index.

        A network provider is asked its space without the search lock (a silent server must not
        hold searches; they answer from full text meanwhile); an in-process model loads under it."""
        fallback = not self._postgres_answers()   # before the search lock: the link may wait for a connection
        try:
            provider = self._guard.get()
            if networked(provider):
                key = self._guard.call("for its embedding space", lambda p: p.space.key, wait=WARM_WAIT)
                with self._lock:
                    self._warm_local(key, fallback)
                return
            with self._lock:
                self._warm_local(self._guard.call("for its embedding space", lambda p: p.space.key), fallback)
        except (ProviderError, ConfigError):
            return  # the first search says why

    def _warm_local(self, key, fallback=True):
        """The journal's vector index, unless Postgres answers (``fallback`` False): then the journal
        is the fallback, and its index (the whole space in memory: gigabytes at a million messages)
        loads only when a search falls back to it."""
        if fallback and self.local is not None and hasattr(self.local, "warm"):
            self.local.warm(key)

    def _postgres_answers(self):
        if self.remote is None:
            return False
        try:
            self.remote.backend()
        except PostgresUnavailable:
            return False
        return True

    def close(self):
        for thing in (self.remote, self.local):
            if thing is not None and hasattr(thing, "close"):
                thing.close()
        self._guard.close()

    # -- searching -------------------------------------------------------------------

    def search(self, query, **options):
        """Search the stored conversations; ``options`` are ``Request.build``'s and ``Filters.build``'s."""
        request = Request.build(query, **options)
        if self._guard.deadline is not None:
            request.until = time.monotonic() + self._guard.deadline
        with self._lock:
            return self._each_backend(lambda backend, notes: self._search(backend, request, notes))

    def _each_backend(self, action, missing_ok=False, local_first=False):
        """``action(backend, notes)`` on Postgres, else on the journal (``missing_ok``: also when
        Postgres does not have the session yet; ``local_first``: the journal first, when there is one)."""
        notes = []
        backends = [self.local] if local_first and self.local is not None else list(self._backends(notes))
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
        legs, vector, space_id, coverage = self._legs(backend, request, notes)
        searching = time.perf_counter()
        # web-search syntax asks for exactly these words: nothing is lent to a message without them
        syntax = request.match is None and request.mode == "fulltext" and SYNTAX.search(request.query)
        filters = replace(request.filters, project_path=self._project_in(backend, request.filters.project_path))
        plan = Plan(request.query, legs, filters, vector, space_id, request.candidates, request.rrf_k,
                    "all" if syntax else request.match or "any", request.weights, 0 if syntax else request.neighbours)
        try:
            found = backend.candidates(plan)
        except ProviderError as exc:   # the query's embedding, begun by _legs (hybrid), failed
            notes.append(f"the embedding model failed, hybrid ran full text only: {exc}")
            request.vector, legs, coverage = None, ("fulltext",), None
            plan = replace(plan, legs=legs, vector=None, space_id=None)
            found = backend.candidates(plan)
        if isinstance(request.vector, Pending):   # resolved by the vector leg
            request.vector, request.embed_ms = request.vector.result(), request.vector.ms
        if coverage:
            notes.append(coverage)
        if not found and request.match is None and plan.match == "all" and len(query_terms(request.query)) > 1:
            plan.match = "any"
            found = backend.candidates(plan)
            if found:
                notes.append("no message has all the words: these have some of them")
        picked = cap_per_session(found, request.per_session, request.limit)
        rows = backend.hydrate([c.key for c in picked])
        if self.redact_results:
            picked, rows = _redacted_hits(picked, rows)
        places = [(rows[c.key]["session_id"], rows[c.key]["seq"]) for c in picked if c.key in rows]
        context = backend.neighbours(places, request.context) if request.context and places else {}
        if self.redact_results:
            context = {place: [{**n, "text": redact(n["text"])} for n in around] for place, around in context.items()}
        hits = [Hit(c, rows[c.key], context.get((rows[c.key]["session_id"], rows[c.key]["seq"]), []),
                    backend.source) for c in picked if c.key in rows]
        done = time.perf_counter()
        head = {"query": request.query, "mode": request.mode, "modes_run": list(legs), "source": backend.source,
                "notes": list(notes), "timings_ms": {"embed": round(request.embed_ms, 2),
                                                     "search": round((done - searching) * 1e3, 2),
                                                     "total": round((done - started) * 1e3, 2)}}
        if request.query_chars:
            head["notes"].insert(0, f"the query was cut to its first {len(request.query):,} of "
                                    f"{request.query_chars:,} characters (what is searched)")
        if not hits:
            head["notes"].append(_nothing_found(request, self._machine_made_matches(backend, plan)))
        return render(head, hits, query_terms(request.query) if "fulltext" in legs else (), request.max_chars)

    @staticmethod
    def _machine_made_matches(backend, plan):
        """(sessions, at least) of the machine-made sessions the plan finds when it found nothing among
        a person's (``origin`` "human"), else None."""
        if plan.filters.origin != "human":
            return None
        # words are what "match" means here: with a full-text leg, the vector leg is not run again for a note
        legs = ("fulltext",) if "fulltext" in plan.legs else plan.legs
        found = backend.candidates(replace(plan, legs=legs, filters=replace(plan.filters, origin="machine")))
        return len({c.session_id for c in found}), len(found) >= plan.candidates

    def _project_in(self, backend, project_path):
        """A project filter as ``backend`` stores the path: Postgres gets paths redacted when sync redacts."""
        if project_path and self.redact and backend.source == "postgres":
            return redact(project_path)
        return project_path

    def _legs(self, backend, request, notes):
        """The legs to run on ``backend``, the query vector (or a ``Pending`` one), the space id and the note
        on the space's coverage (None, None, None for full text)."""
        if request.mode == "fulltext":
            return ("fulltext",), None, None, None
        space = self._space(backend, request.mode, notes, request)
        if space is None:
            return ("fulltext",), None, None, None
        embed = lambda p: p.embed_query(self._outgoing(request.query))   # noqa: E731
        if request.vector is None and request.mode == "semantic":
            started = time.perf_counter()
            try:
                request.vector = self._guard.call("the query", embed, _left(request))
            except ProviderError as exc:
                raise SearchError(f"the embedding model failed, semantic search cannot run: {exc}. "
                                  "Try mode='fulltext'.") from None
            request.embed_ms = (time.perf_counter() - started) * 1e3
        elif request.vector is None:
            # embedded while the full-text leg runs; the vector leg waits for it (``Plan.query_vector``),
            # and ``_search`` runs full text alone if it fails
            request.vector = self._guard.start("the query", embed, _left(request))
        legs = ("semantic",) if request.mode == "semantic" else LEGS
        return legs, request.vector, space["id"], _coverage_note(backend, space)

    def _space(self, backend, mode, notes, request=None):
        """The backend's row of the configured space, checked against the model; None: full text only."""
        if not backend.spaces():  # nothing embedded yet: no need to load a model to find that out
            return self._no_vectors(backend, mode, notes, "any embedding model")
        try:
            # a remote model may be asked its dimensions here
            configured = self._guard.call("for its embedding space", lambda p: p.space, _left(request))
        except (ProviderError, ConfigError) as exc:
            return self._unavailable(mode, notes, exc)
        row = backend.space(configured.key)
        if row is None or not row["vectors"]:
            others = [_space_of(s) for s in backend.spaces() if s["key"] != configured.key]
            rebuilding = any(same_model(s, configured) for s in others)   # another embed_text: sync re-embeds
            if others and not rebuilding:
                raise mismatch_error(others, configured, "no vectors were stored with the configured model")
            return self._no_vectors(backend, mode, notes, configured.describe(), rebuilding)
        try:
            self._check_canary(backend.source, row, request)   # embeds the canary sentence once
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

    def _check_canary(self, source, row, request=None):
        """Refuse vectors the configured model does not reproduce (checked once per stored canary)."""
        canary = row["canary"]
        if canary is None:
            return
        key = (source, row["id"], canary.tobytes())
        if key not in self._canaries:
            try:
                self._guard.call("the canary sentence", lambda p: check_canary(_space_of(row), canary, p),
                                 _left(request))
                self._canaries[key] = None
            except SpaceMismatchError as exc:
                self._canaries[key] = exc
        if self._canaries[key] is not None:
            raise self._canaries[key]

    # -- reading and listing ------------------------------------------------------------

    def conversation(self, session_id, start_seq=None, end_seq=None, limit=50, kinds=None,
                     max_chars=20_000, message_chars=4_000, local_first=False):
        """A page of one conversation with its totals; ``next_start_seq`` when more follows.

        ``local_first``: the journal before Postgres (what the hook recorded a moment ago is in the
        journal first: ``ui.live``)."""
        kinds = tuple(kinds) if kinds else transcript.CONVERSATION_KINDS
        clean = redact if self.redact_results else None
        with self._lock:
            return self._each_backend(lambda backend, notes: _page(
                backend, notes, session_id, start_seq, end_seq, limit, kinds, max_chars, message_chars, clean),
                missing_ok=True, local_first=local_first)

    def recent_sessions(self, limit=10, project_path=None, include_subagents=False, max_chars=None, origin="human"):
        """The most recent conversations, newest first (within ``max_chars`` as JSON: the oldest left out;
        ``origin``: ``core.ORIGINS``)."""
        project = project_path.rstrip("/") or "/" if project_path else None
        origin = check_origin(origin)
        clean = redact if self.redact_results else None
        with self._lock:
            return self._each_backend(lambda backend, notes: _listing(
                backend.source, notes, [_session_dict(s, clean) for s in backend.sessions(
                    limit, self._project_in(backend, project), include_subagents, origin)], max_chars))


    def subagents(self, session_id):
        """The subagent conversations ``session_id`` started, oldest first (``recent_sessions``' dicts)."""
        clean = redact if self.redact_results else None
        with self._lock:
            return self._each_backend(lambda backend, notes: [_session_dict(s, clean)
                                                              for s in backend.subagents(session_id)])

    def session_rows(self, limit, project_path=None, origin="human"):
        """The ``limit`` most recent sessions (not subagents) as the store has them, not redacted: for
        counting (``ui.activity``), not for showing."""
        project = project_path.rstrip("/") or "/" if project_path else None
        origin = check_origin(origin)
        with self._lock:
            return self._each_backend(lambda backend, notes: backend.sessions(
                limit, self._project_in(backend, project), False, origin))


WARM_WAIT = 600.0   # seconds the opening thread waits for a network provider (searches do not wait for it)


def _coverage_note(backend, space):
    """A note when many messages have no vectors yet: the semantic leg cannot find those (else None).
    Messages of the kinds the space's recipe embeds nothing of (``embed_text``) are not counted: they
    never will."""
    if not hasattr(backend, "coverage"):
        return None
    embedded, total = backend.coverage(space["id"], skipped_kinds(space.get("options")))
    if total and embedded < COVERAGE_NOTE * total:
        return (f"{embedded:,} of {total:,} messages ({100 * embedded / total:.0f}%) have vectors in the "
                f"{backend.source} store: the others are found by their words only (`chats sync` embeds them)")
    return None


def _left(request):
    """Seconds left of a request's provider budget (None: no budget, wait as the provider does)."""
    until = getattr(request, "until", None)
    return None if until is None else max(0.0, until - time.monotonic())


def _page(backend, notes, session_id, start_seq, end_seq, limit, kinds, max_chars, message_chars, clean=None):
    """A page within ``max_chars`` as JSON: messages while they fit; a first message too long for the
    page is cut to what is left (the next page starts after it)."""
    session = bounds.names_cut(_session_dict(backend.session(session_id), clean))
    start = 0 if start_seq is None else max(0, int(start_seq))
    rows = backend.messages(session_id, start, end_seq, kinds, max(1, min(int(limit), 500)) + 1)
    more = len(rows) > limit
    page = {"source": backend.source, "notes": [bounds.cut(n, bounds.NOTE_CHARS) for n in notes],
            "session": session, "messages": [], "returned": 0, "next_start_seq": None}
    used, messages = bounds.size(page) + 40, page["messages"]     # 40: room for the counts
    for row in rows[:limit]:
        message = {"seq": row["seq"], "role": row["role"], "kind": row["kind"], "timestamp": iso(row["timestamp"]),
                   "text": _message_text(row["content"], message_chars, clean)}
        cost = bounds.size(message) + 2
        if max_chars and used + cost > max_chars:
            room = max_chars - used - (cost - bounds.size(message["text"]))
            if messages or room < 200:
                more = True
                break
            message["text"] = bounds.cut_json(message["text"], room)
            cost = bounds.size(message) + 2
        used += cost
        messages.append(message)
    last = messages[-1]["seq"] if messages else None
    page["returned"] = len(messages)
    page["next_start_seq"] = last + 1 if more and last is not None else None
    return bounds.squeeze(page, max_chars)


def _listing(source, notes, sessions, max_chars):
    """``list_recent_sessions``' answer within ``max_chars`` as JSON: the oldest sessions left out."""
    out = {"source": source, "notes": [bounds.cut(n, bounds.NOTE_CHARS) for n in notes], "sessions": [],
           "truncated": False}
    used = bounds.size(out) + 200                                  # 200: room for the note below
    for index, session in enumerate(sessions):
        item = bounds.names_cut(session)
        cost = bounds.size(item) + 2
        if max_chars and used + cost > max_chars:
            out["truncated"] = True
            out["notes"].append(f"{len(sessions) - index} older session(s) left out to fit max_chars")
            break
        used += cost
        out["sessions"].append(item)
    return bounds.squeeze(out, max_chars)


REDACT_MARGIN = 1000   # characters redacted past a cut, so a secret the cut would halve is still found whole
_NAMES = ("name", "session_name", "project_path", "git_branch")   # text a row carries beside the content


def _message_text(content, limit, clean=None):
    """A message as a page shows it: whole, or its first ``limit`` characters and how many more;
    ``clean`` (redaction) runs on what is shown and ``REDACT_MARGIN`` beyond it."""
    if clean is not None:
        shown = clean(content[:limit + REDACT_MARGIN])
        if len(content) <= limit + REDACT_MARGIN and len(shown) <= limit:
            return shown
        return shown[:limit] + f"… [{max(0, len(content) - limit)} more characters]"
    if len(content) <= limit:
        return content
    return content[:limit] + f"… [{len(content) - limit} more characters]"


def _cleaned(row, clean):
    """``row`` with its names, project path and branch through ``clean`` (None: as it is)."""
    if clean is None:
        return row
    return {**row, **{k: clean(row[k]) for k in _NAMES if isinstance(row.get(k), str) and row[k]}}


def _redacted_hits(picked, rows):
    """Hits as the model may see them: each message redacted whole (its matched chunk moved onto the
    redacted text), its session's name, project path and branch too."""
    out = {key: _cleaned({**row, "content": redact(row["content"])}, redact) for key, row in rows.items()}
    moved = []
    for c in picked:
        row = rows.get(c.key)
        if c.chunk and row is not None and out[c.key]["content"] != row["content"]:
            c = replace(c, chunk=redacted_span(row["content"], *c.chunk))
        moved.append(c)
    return moved, out


def _session_dict(row, clean=None):
    return {**_cleaned(row, clean), "started_at": iso(row.get("started_at")), "last_at": iso(row.get("last_at"))}


def _space_of(row):
    options = row.get("options") or {}
    if isinstance(options, str):
        options = json.loads(options or "{}")
    return Space(row["provider"], row["model"], int(row["dimensions"]), options)


def _nothing_found(request, machine_made=None):
    """The note of a search that found nothing; ``machine_made``: (sessions, at least) of the machine-made
    sessions that match when a person's were searched."""
    sessions, more = machine_made or (0, False)
    if sessions:
        return (f"nothing found among the person's sessions, but {'at least ' if more else ''}{sessions} "
                f"machine-made session{'s' if sessions > 1 else ''} (scripts, SDK runs, claude -p) match: "
                f"include them with origin=\"any\" (MCP) or --origin any (chats search)")
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

