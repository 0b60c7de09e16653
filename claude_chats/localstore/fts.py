"""Turning any text a person types into a safe FTS5 query.

FTS5 has its own syntax (quotes, ``NEAR``, ``*``, ``AND``/``OR``/``NOT``,
column filters, parentheses); typed text must never be parsed as that syntax.
Each word is quoted as a string; FTS5's tokenizer then splits it exactly as it
split the stored text. ``fts_match`` reads a query like Postgres'
``websearch_to_tsquery`` (words ANDed, ``"quoted phrases"``, ``or`` between
words, ``-word`` excludes, English stopwords dropped), or as any of its words.
"""

import re

from ..search.core import any_words, terms
from ..words import STOPWORDS

_TOKEN = re.compile(r'(-?)"([^"]*)"?|(-?)([^\s"]+)')


def quote(word):
    return '"' + word.replace('"', '""') + '"'


def fts_match(text, match="all"):
    """An FTS5 MATCH expression for typed ``text`` (None when it has no word to look for)."""
    if match == "any":
        return " OR ".join(quote(w) for w in any_words(text)) or None
    groups, negatives, joined = [], [], False
    for neg_q, phrase, neg_w, word in _TOKEN.findall(text or ""):
        raw = phrase or word
        if not phrase and raw.lower() == "or":
            joined = bool(groups)
            continue
        words = terms(raw)
        if not words:
            continue
        term = quote(" ".join(words))
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
