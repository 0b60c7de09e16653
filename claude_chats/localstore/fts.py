"""Turning any text a person types into a safe FTS5 query.

FTS5 has its own syntax (quotes, ``NEAR``, ``*``, ``AND``/``OR``/``NOT``,
column filters, parentheses); typed text must never be parsed as that syntax.
Each word is quoted as a string; FTS5's tokenizer then splits it exactly as it
split the stored text.
"""

import re

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 32


def terms(text):
    """The words of ``text``, in order, without repeats (at most ``MAX_TERMS``)."""
    seen, out = set(), []
    for word in _WORD.findall(text or ""):
        key = word.lower()
        if key not in seen:
            seen.add(key)
            out.append(word)
    return out[:MAX_TERMS]


def quote(word):
    return '"' + word.replace('"', '""') + '"'


def queries(text):
    """FTS5 MATCH strings to try in order: all words, then any word.

    Nothing is yielded for text without a single word (only punctuation or
    emoji): there is nothing to search for.
    """
    words = terms(text)
    if not words:
        return
    yield " AND ".join(quote(w) for w in words)
    if len(words) > 1:
        yield " OR ".join(quote(w) for w in words)
