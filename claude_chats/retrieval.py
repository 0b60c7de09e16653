"""Tuned retrieval: what text is embedded per message, how the full-text leg reads a
question and scores a message with its neighbours, and how the two legs are weighted.

Each choice is a small function or constant, measured with
``scripts/bench_locomo.py`` (LoCoMo) and ``chats eval tests/eval_queries.jsonl``
(Claude Code sessions); BENCHMARKS.md has the numbers, including what did not
help. The search stack wires them in at these seams:

- ``embed_messages`` / ``CONTEXT`` (from ``claude_chats.models.recipe``, where sync
  uses them): what is embedded for a message; the recipe is part of the space.
- ``fulltext_match``: any non-stopword term (OR), not all of them: a question
  rarely shares every word with its answer.
- ``with_neighbours``: a message's full-text score plus ``NEIGHBOUR_WEIGHT`` x the
  scores of the messages within ``NEIGHBOUR_SPAN`` of it in its session (answers
  often sit next to the turn that names the topic).
- ``reweigh``: Reciprocal Rank Fusion with a weight per leg (``LEG_WEIGHTS``).

``TunedSearch`` is the journal backend with these in place and ``searcher`` a
``Searcher`` over it; the benchmark and the tests use them.
"""

from dataclasses import replace

from . import search
from .localstore import fts
from .localstore.search import LocalSearch, _filters, fts_match
from .models.recipe import (CONTEXT, HEADER, LABELS, PREVIOUS_CHARS, Recipe, RecipeProvider,  # noqa: F401
                            embed_messages, header, index_journal, prefix, with_previous)

NEIGHBOUR_SPAN = 2         # messages either side whose full-text score a message borrows
NEIGHBOUR_WEIGHT = 0.35    # ... at this fraction
FULLTEXT_POOL = 1000       # full-text matches scored before neighbours are added
LEG_WEIGHTS = {"fulltext": 1.0, "semantic": 0.5}


# -- how a query is run ------------------------------------------------------------------

def fulltext_match(text):
    """An FTS5 expression matching any of the query's terms (stopwords dropped unless nothing else is left)."""
    words = fts.terms(" ".join(search.query_terms(text)))
    return " OR ".join(fts.quote(w) for w in words) or None


def with_neighbours(matched, neighbours, span=NEIGHBOUR_SPAN, weight=NEIGHBOUR_WEIGHT):
    """Scores with context: ``matched`` is {(session, seq): score} of the full-text matches,
    ``neighbours`` the (session, seq) of every message that may be ranked; each gets its own
    score plus ``weight`` x the sum of the scores within ``span`` of it in its session."""
    out = {}
    for session, seq in neighbours:
        borrowed = sum(matched.get((session, seq + d), 0.0) for d in range(-span, span + 1) if d)
        total = matched.get((session, seq), 0.0) + weight * borrowed
        if total > 0:
            out[(session, seq)] = total
    return out


def reweigh(fused, rrf_k, weights=None):
    """Fused candidates re-scored by weighted Reciprocal Rank Fusion (sum of weight / (k + rank)), re-ordered."""
    weights = weights or LEG_WEIGHTS
    for c in fused:
        c.score = sum(weights.get(leg, 1.0) / (rrf_k[leg] + rank) for leg, rank in c.ranks.items())
    return sorted(fused, key=search._fusion_order)


class TunedSearch(LocalSearch):
    """The journal backend with the tuned full-text leg and weighted fusion."""

    def __init__(self, journal, match="any", span=NEIGHBOUR_SPAN, weight=NEIGHBOUR_WEIGHT, weights=None):
        super().__init__(journal)
        self.match, self.span, self.weight, self.weights = match, span, weight, weights or LEG_WEIGHTS

    def candidates(self, plan):
        return reweigh(super().candidates(plan), plan.rrf_k, self.weights)

    def fulltext(self, plan):
        """Messages by bm25 plus what their neighbours lend (at most ``plan.candidates``). A neighbour
        lends whatever its role or time: the filters choose what is ranked, not what is read."""
        match = fulltext_match(plan.text) if self.match == "any" else fts_match(plan.text, plan.match)
        if match is None:
            return []
        lending = self.span and self.weight
        where, args = _filters(replace(plan.filters, role=None, since=None, until=None) if lending else plan.filters)
        rows = self.conn.execute(
            f"SELECT m.id, m.session_id, m.seq, -bm25(messages_fts) FROM messages_fts "
            f"JOIN messages m ON m.id = messages_fts.rowid JOIN sessions s ON s.id = m.session_id "
            f"WHERE messages_fts MATCH ? AND {where} ORDER BY bm25(messages_fts) LIMIT ?",
            (match, *args, FULLTEXT_POOL)).fetchall()
        matched = {(session, seq): score for _, session, seq, score in rows}
        places = {(session, seq): i for i, session, seq, _ in rows}
        if lending and matched:
            places = self._around(matched, *_filters(plan.filters))
            matched = with_neighbours(matched, places, self.span, self.weight)
        ranked = sorted(matched.items(), key=lambda item: (-item[1], places[item[0]]))[:plan.candidates]
        return [search.Candidate(places[place], place[0], scores={"fulltext": score}) for place, score in ranked]

    def _around(self, matched, where, args):
        """{(session, seq): message id} of the messages within ``span`` of a match that pass the filters."""
        import json

        pairs = json.dumps([[session, seq] for session, seq in matched])
        rows = self.conn.execute(
            f"SELECT DISTINCT m.session_id, m.seq, m.id FROM json_each(?) p "
            f"JOIN messages m ON m.session_id = json_extract(p.value, '$[0]') "
            f"AND m.seq BETWEEN json_extract(p.value, '$[1]') - ? AND json_extract(p.value, '$[1]') + ? "
            f"JOIN sessions s ON s.id = m.session_id WHERE {where}", (pairs, self.span, self.span, *args)).fetchall()
        return {(session, seq): i for session, seq, i in rows}


def searcher(journal, provider_factory, recipe=HEADER, **tuning):
    """A ``Searcher`` over ``journal`` with the tuned backend (``TunedSearch(**tuning)``); the
    vectors are ``index_journal``'s with ``recipe`` (None: sync's, of the plain content)."""
    factory = (lambda: RecipeProvider(provider_factory(), recipe)) if recipe else provider_factory
    return search.Searcher(TunedSearch(journal, **tuning), None, factory)
