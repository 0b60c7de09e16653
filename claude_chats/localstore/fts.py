"""Turning any text a person types into a safe FTS5 query.

FTS5 has its own syntax (quotes, ``NEAR``, ``*``, ``AND``/``OR``/``NOT``,
column filters, parentheses); typed text must never be parsed as that syntax.
Each word is quoted as a string; FTS5's tokenizer then splits it exactly as it
split the stored text. ``fts_match`` reads a query like Postgres'
``websearch_to_tsquery`` (words ANDed, ``"quoted phrases"``, ``or`` between
words, ``-word`` excludes, English stopwords dropped), or as any of its words.
"""

from ..search.core import any_words, web_query


def quote(word):
    return '"' + word.replace('"', '""') + '"'


def fts_match(text, match="all"):
    """An FTS5 MATCH expression for typed ``text`` (None when it has no word to look for)."""
    if match == "any":
        return " OR ".join(quote(w) for w in any_words(text)) or None
    groups, negatives = web_query(text)
    if not groups:
        return None
    expression = " AND ".join(_either(g) for g in groups)
    return "".join([f"({expression})" if negatives else expression] +
                   [f" NOT {quote(' '.join(n))}" for n in negatives])


def _either(group):
    items = [quote(" ".join(item)) for item in group]
    return items[0] if len(items) == 1 else "(" + " OR ".join(items) + ")"
