"""Words of typed text: the English stop words, a split that needs no ``re``, and which words of
an any-word query to match on.

Ground floor: the search kernel (both stores) and the hook's recall hints use them
(``re`` would cost the hook milliseconds).
"""

MATCH_ROWS = 2000         # "any word" matches at most about this many messages (see ``selective``)

# Postgres' english stop words (tsearch_data/english.stop), and "could": what neither store searches
# for, so that a query looks for the same words in both (a word Postgres drops must not count in the journal)
STOPWORDS = frozenset("""a about above after again against all am an and any are as at be because been before
being below between both but by can could did do does doing don down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own s same she should so some
such t than that the their theirs them themselves then there these they this those through to too under until
up very was we were what when where which while who whom why will with you your yours yourself yourselves
""".split())


def alnum_words(text, limit=64):
    """The alphanumeric runs of ``text`` (FTS5's unicode61 tokenizer splits at the same places), in order."""
    out, current = [], []
    for ch in text:
        if ch.isalnum():
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
            if len(out) >= limit:
                return out
    if current:
        out.append("".join(current))
    return out[:limit]


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
