"""Tuned retrieval, measured with ``scripts/bench_locomo.py`` (LoCoMo) and ``chats eval
tests/eval_queries.jsonl`` (Claude Code sessions); BENCHMARKS.md has the numbers, including
what did not help. Each choice now lives where the product runs it:

- what is embedded for a message (``embed_messages``, the ``CONTEXT`` recipe, part of the
  space): ``claude_chats.models.recipe``, where sync uses it;
- the full-text leg matching *any* of a question's words, ranked bm25-like in both stores,
  and a message borrowing ``NEIGHBOUR_WEIGHT`` x the full-text scores of the messages within
  ``NEIGHBOUR_SPAN`` of it: ``claude_chats.search`` (the constants),
  ``claude_chats.localstore.search`` and ``claude_chats.sync.pgsearch``;
- weighted Reciprocal Rank Fusion (``LEG_WEIGHTS``): ``claude_chats.search.fuse`` and the SQL
  fusion in ``claude_chats.sync.pgsearch``.

``searcher`` is the journal's ``Searcher`` over vectors that ``index_journal`` wrote with a
recipe; the benchmark and the tests use it.
"""

from . import search
from .localstore.search import LocalSearch, with_neighbours  # noqa: F401
from .models.recipe import (CONTEXT, HEADER, LABELS, PREVIOUS_CHARS, Recipe, RecipeProvider,  # noqa: F401
                            embed_messages, header, index_journal, prefix, with_previous)
from .search import LEG_WEIGHTS, NEIGHBOUR_SPAN, NEIGHBOUR_WEIGHT  # noqa: F401


def searcher(journal, provider_factory, recipe=HEADER):
    """The product's ``Searcher`` over ``journal``, its query vectors in the space of ``recipe``
    (``index_journal``'s vectors; None: the provider's own space, as sync wrote it)."""
    factory = (lambda: RecipeProvider(provider_factory(), recipe)) if recipe else provider_factory
    return search.Searcher(LocalSearch(journal), None, factory)
