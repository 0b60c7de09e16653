"""The search kernel both stores share: filters, plans, candidates, fusion, query words.

Imports no store and no model. ``claude_chats.localstore.search`` (the journal:
FTS5 bm25 and sqlite-vec) and ``claude_chats.pgstore.search`` (Postgres: both
legs and their fusion in one SQL statement) implement ``Backend``;
``claude_chats.search.searcher.Searcher`` runs a search over one of them and
renders the result.

The full-text leg (both stores) matches a message with *any* of the query's
words (a question rarely shares every word with its answer), ranked bm25-like
(rare words weigh more, so a message with all of them usually comes first); a
message then adds ``NEIGHBOUR_WEIGHT`` x the full-text scores of the messages
within ``NEIGHBOUR_SPAN`` of it in its session (answers often sit next to the
turn that names the topic). A full-text query written in web-search syntax
("phrases", ``or``, ``-word``) is read as such: all its words, then any of them
when no message has all. BENCHMARKS.md has the measurements behind each choice.
"""

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Protocol

from .. import transcript
from ..errors import SearchError
from ..words import MATCH_ROWS, STOPWORDS, selective  # noqa: F401 - the kernel's, kept on the ground floor for the hook

MODES = ("hybrid", "semantic", "fulltext")
LEGS = ("fulltext", "semantic")
RRF_K = 60
CANDIDATES = 40        # each leg's top candidates before fusion
PER_SESSION = 2        # at most this many hits from one session
CONTEXT = 2            # neighbouring messages either side of a hit
TEXT_CHARS = 700       # matched text per hit
NEIGHBOUR_CHARS = 200  # each neighbouring message, as a hit shows it
NEIGHBOUR_READ = 1200  # ... as a store reads it (whitespace collapsed, then cut), before the hit shortens it:
                       # 1,000 past what is shown, so a secret the cut would halve is still redacted whole
MAX_CHARS = 12_000     # the whole result, as JSON
ROLES = ("user", "assistant", "system")
LEG_WEIGHTS = {"fulltext": 1.0, "semantic": 0.5}   # weighted RRF: the vector leg counts half
NEIGHBOUR_SPAN = 2        # messages either side whose full-text score a message borrows
NEIGHBOUR_WEIGHT = 0.35   # ... at this fraction (0: none)
# Full text ranks at most this many matches of a query, the newest (both stores): a common word matches
# a large part of a year of history, and ranking every match (bm25, ts_rank) took seconds to a minute
SCORED_MATCHES = 2000
FULLTEXT_POOL = 5         # x a leg's candidates: the top full-text matches that lend to their neighbours
MATCHES = ("all", "any")
# Which sessions: a person's (the default), machine-made ones (started by scripts and SDK runs:
# `claude -p`, the Agent SDK, CLAUDE_CHATS_MACHINE_MADE=1), or any.
ORIGINS = ("human", "machine", "any")
COVERAGE_NOTE = 0.9       # below this share of messages with vectors, a search that ran vectors says so


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
    origin: str = "human"              # see ORIGINS

    @classmethod
    def build(cls, project_path=None, session_id=None, role=None, since=None, until=None,
              include_subagents=True, kinds=None, origin="human"):
        if role is not None and role not in ROLES:
            raise SearchError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        origin = check_origin(origin)
        kinds = tuple(kinds) if kinds else transcript.DEFAULT_KINDS
        unknown = [k for k in kinds if k not in transcript.KINDS]
        if unknown:
            raise SearchError(f"unknown kind(s) {', '.join(map(repr, unknown))}; "
                              f"choose from: {', '.join(transcript.KINDS)}")
        project = project_path.rstrip("/") or "/" if project_path else None
        return cls(project, session_id or None, role, parse_time(since, "since"),
                   parse_time(until, "until", end=True), bool(include_subagents), kinds, origin)


def check_origin(origin):
    """``origin`` (None: "human") if it is one of ``ORIGINS``, else a SearchError."""
    origin = origin or "human"
    if origin not in ORIGINS:
        raise SearchError(f"origin must be one of {', '.join(ORIGINS)}, not {origin!r}")
    return origin


EARLIEST = datetime.min.replace(tzinfo=timezone.utc)
LATEST = datetime.max.replace(tzinfo=timezone.utc)


def parse_time(value, name, end=False):
    """An ISO date or date-time as an aware UTC datetime; a bare date ``until`` covers its whole day.

    A moment beyond what a datetime holds in UTC (``--until 9999-12-31`` covers a day that ends in
    the year 10000; ``0001-01-01T00:00+05:00`` is in the year 0) is the first or last one that it
    holds: no message is stored beyond either, so the filter selects the same messages.
    """
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
            if moment.date() == date.max:
                return LATEST
            moment += timedelta(days=1)
    if isinstance(moment, date) and not isinstance(moment, datetime):
        moment = datetime(moment.year, moment.month, moment.day)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:   # east of UTC near the first day, or west of it near the last
        return EARLIEST if moment.utcoffset() > timedelta(0) else LATEST


@dataclass
class Plan:
    """What a backend runs: the legs, their inputs, and the filters."""

    text: str
    legs: tuple
    filters: Filters
    vector: object = None          # float32 query vector (semantic leg), or a ``guard.Pending`` one
    space_id: object = None        # the backend's id of the configured embedding space
    candidates: int = CANDIDATES
    rrf_k: dict = field(default_factory=lambda: {leg: RRF_K for leg in LEGS})
    match: str = "all"             # full text: "all" words (web-search syntax), or "any" word
    weights: dict = field(default_factory=lambda: dict(LEG_WEIGHTS))   # leg -> weight in the fusion
    neighbours: float = NEIGHBOUR_WEIGHT   # what a full-text match lends the messages around it

    def query_vector(self):
        """The query vector; when it is still being embedded (hybrid: the full-text leg runs meanwhile),
        waited for here, raising the provider's error if embedding failed."""
        return self.vector.result() if hasattr(self.vector, "result") else self.vector


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


# -- query words -------------------------------------------------------------------------

SYNTAX = re.compile(r'"|(?:^|\s)-\w|\bor\b')   # web-search syntax: a phrase, an excluded word, ``or``


def query_terms(text):
    """The words of a query that matter for full text (English stopwords dropped unless nothing else is left)."""
    words = re.findall(r"\w+", text or "", re.UNICODE)
    kept = [w for w in words if w.lower() not in STOPWORDS]
    return kept or words


MAX_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)
_TOKEN = re.compile(r"[^\W_]+")   # what FTS5's unicode61 tokenizer counts as a token


def word_count(text):
    """The tokens of ``text`` as the journal's FTS5 tokenizer (unicode61) counts them: bm25's
    document length, which Postgres stores with each message so that both stores rank alike."""
    return _TOKEN.subn("", text)[1] if text else 0   # subn: counted without a list of the words (2x faster)


def terms(text):
    """The words of ``text``, in order, without repeats (at most ``MAX_TERMS``): the journal's
    FTS5 tokenizer (unicode61) splits a quoted word at the same places."""
    seen, out = set(), []
    for word in _WORD.findall(text or ""):
        key = word.lower()
        if key not in seen:
            seen.add(key)
            out.append(word)
    return out[:MAX_TERMS]


def any_words(text):
    """The words an any-word full-text query looks for (both stores): the query's terms, split
    and deduplicated as the journal's FTS5 tokenizer splits them."""
    return terms(" ".join(query_terms(text)))


_WEB_TOKEN = re.compile(r'(-?)"([^"]*)"?|(-?)([^\s"]+)')


def web_query(text):
    """A query in web-search syntax as both stores read it: ``(groups, negatives)``.

    Words are ANDed; ``"a phrase"`` is one item; ``or`` between two items makes them one
    group (either will do); ``-word`` / ``-"a phrase"`` excludes. An item is a tuple of
    ``terms`` (a phrase: its words in order). A group of one English stopword is dropped,
    unless nothing else is left. The journal writes this as FTS5 syntax, Postgres as a tsquery.
    """
    groups, negatives, joined = [], [], False
    for neg_q, phrase, neg_w, word in _WEB_TOKEN.findall(text or ""):
        raw = phrase or word
        if not phrase and raw.lower() == "or":
            joined = bool(groups)
            continue
        item = tuple(terms(raw))
        if not item:
            continue
        if neg_q or neg_w:
            negatives.append(item)
        elif joined:
            groups[-1].append(item)
        else:
            groups.append([item])
        joined = False
    kept = [g for g in groups if len(g) > 1 or len(g[0]) > 1 or g[0][0].lower() not in STOPWORDS]
    return kept or groups, negatives


def shorten(text, limit):
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:max(1, limit - 1)] + "…"


class Backend(Protocol):
    """What a store implements for the searcher (``localstore.search.LocalSearch``,
    ``pgstore.search.PgSearch``). Losing Postgres raises ``PostgresUnavailable`` from any method.

    ``space(key)`` and ``spaces()`` give dicts (id, key, provider, model, dimensions, options,
    canary: float32 array or None, vectors: bool); ``hydrate`` rows are ``Hit.row``'s (session_id,
    session_name, project_path, git_branch, role, kind, seq, timestamp, uuid, content, is_subagent).
    """

    source: str   # "postgres" or "local"

    def space(self, key):
        """The space stored under ``key``, or None."""

    def spaces(self):
        """Every space that holds vectors."""

    def coverage(self, space_id):
        """(messages holding vectors of the space, messages stored)."""

    def candidates(self, plan):
        """[Candidate] fused and ordered (a ``Plan`` with one leg: that leg's order). The vector leg
        reads ``plan.query_vector()`` as late as it can: the query may still be being embedded."""

    def hydrate(self, keys):
        """{key: row} of the candidates' messages."""

    def neighbours(self, places, span):
        """{(session_id, seq): [{"seq", "role", "kind", "text"}]}: the messages within ``span`` of each place."""

    def session(self, session_id):
        """The conversation's row (SessionNotFound when it is not stored)."""

    def messages(self, session_id, start, end, kinds, limit):
        """[{"seq", "role", "kind", "timestamp", "content"}] of one conversation, in order."""

    def sessions(self, limit, project_path, include_subagents, origin):
        """The most recent conversations, newest first (``origin``: one of ``ORIGINS``)."""

    def subagents(self, session_id):
        """The subagent conversations ``session_id`` started (rows as ``sessions``), oldest first."""
