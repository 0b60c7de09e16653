"""Recall hints: a cheap full-text probe of a prompt against the other sessions (UserPromptSubmit).

``recall_hints(conn, prompt, session_id)`` gives at most three pointers to other sessions whose best
message strongly matches the prompt, and only when it is strong (a wrong hint costs the person's context
window every turn: precision first); ``recall.hint_context`` words them for Claude.

Apart from ``recall`` (the contexts, their redaction and bounds) because the hook runs this on every
prompt: stdlib only, the full-text parts and the words, and ``bm25`` (the ranker) only when something
can be ranked. Most prompts stop before that: too few words, or only words too common to point anywhere
(``python -X importtime``: this module and its imports cost a prompt about half a millisecond less than
``recall`` did).
"""

import math

import apsw

from .. import transcript
from ..words import MATCH_ROWS, STOPWORDS, alnum_words, selective
from . import ftsparts
from .db import BUSY_TIMEOUT_MS, SESSION_OF, Immediate, Snapshot, session_name

_SESSION_NAME = session_name()
REDACT_MARGIN = 1000       # characters read and redacted past what is shown, as the MCP pages do (searcher)

HINT_KINDS = (transcript.TEXT, transcript.COMPACT_SUMMARY, transcript.RECAP, transcript.LINK)
HINTS = 3                  # pointers at most
# The best message of a session must reach a bm25 of HINT_STRENGTH x ln(messages in the journal): bm25 weighs
# a word by its rarity, ln(N / holders), so scores grow with the journal and the bar with them.
# scripts/bench_hints.py chose 1.9 on the dev split of tests/data/queries (15 on its 2,727 messages).
HINT_STRENGTH = 1.9
HINT_MIN_TERMS = 3         # ... holding at least this many of the prompt's words
HINT_MIN_SHARE = 0.4       # ... and at least this share of them
HINT_TERMS = 24            # words of a long prompt that are probed
HINT_ROWS = 200            # best full-text matches looked at
SNIPPET_CHARS = 160


def prompt_terms(prompt):
    """The words of a prompt worth probing: 3+ characters, not stop words, each once."""
    seen, out = set(), []
    for word in alnum_words(prompt or "", limit=256):
        key = word.lower()
        if len(word) >= 3 and key not in STOPWORDS and key not in seen:
            seen.add(key)
            out.append(word)
    return out[:HINT_TERMS]


def recall_hints(conn, prompt, session_id=None, strength=HINT_STRENGTH):
    """``_recall_hints`` in one snapshot of the journal (a part dropped or sealed meanwhile is not asked
    half-way); then the words it found common are remembered (``remember_common``)."""
    found = []
    with Snapshot(conn):
        hints = _recall_hints(conn, prompt, session_id, strength, found)
    if found:
        remember_common(conn, found)
    return hints


def _recall_hints(conn, prompt, session_id, strength, found):
    """Up to ``HINTS`` other sessions whose best message strongly matches ``prompt``:
    ``[{session_id, seq, name, last_at, score, matched, text}]``, best first; [] when none is strong
    (``text``: the message's first ``SNIPPET_CHARS`` + ``REDACT_MARGIN`` characters and one more, as
    stored: ``hint_context`` shows them).

    A strong match: the message's bm25 reaches ``strength`` x ln(journal size) and it holds at least
    ``HINT_MIN_TERMS`` and ``HINT_MIN_SHARE`` of the prompt's words. The current session and its
    subagents, a fork's copies, tool output and machine-made sessions (scripts, SDK runs) are left
    out: a hint must point somewhere new, and somewhere a person was. The words found held by more than
    ``MATCH_ROWS`` messages, not known to be before, are added to ``found``.
    """
    terms = prompt_terms(prompt)
    if len(terms) < HINT_MIN_TERMS:
        return []
    size = conn.execute("SELECT max(id) FROM messages").fetchall()[0][0] or 0
    min_score = strength * math.log(max(size, 2))
    names = ftsparts.tables(conn)
    counts = word_counts(conn, terms, names, found)
    probed, how = selective(terms, counts, size)   # as search does: the rarest words when all would match too much
    if how == "all":
        return []   # only common words: nothing specific to point at, and no need to rank them
    most = _most_each(probed, counts, terms, size)
    able = _able(conn, names, most, dict(zip(terms, counts)), min_score)
    if able is not None and not able:
        return []   # no message can reach the bar: nothing to rank
    match = " OR ".join(_quote(t) for t in probed)
    from . import bm25   # (not on the path of a prompt that stops above)

    ranker = bm25.Ranker(conn)
    ranker.counted({_quote(t): c for t, c in zip(terms, counts) if c <= MATCH_ROWS}, names)   # exact: not capped
    ranker.prepare(match, names)    # scores as one table gives them, whatever the parts
    current = session_id or ""
    ranked, args = _best_of_every_table(names, ranker, match, able)
    rows = conn.execute(
        f"SELECT n.session_id, m.seq, -f.rank, chats_text(m.content), {_SESSION_NAME}, coalesce(s.last_at, s.first_at) "
        f"FROM ({ranked} ORDER BY rank LIMIT {HINT_ROWS}) f "
        f"JOIN messages m ON m.id = f.rowid {SESSION_OF} "
        f"WHERE m.copy = 0 AND s.machine_made = 0 AND m.kind IN ({','.join('?' * len(HINT_KINDS))}) "
        f"AND n.session_id != ? "
        f"AND s.parent_session_id IS NOT ? ORDER BY f.rank LIMIT 40",   # (no session: '' names none)
        (*args, *HINT_KINDS, current, current)).fetchall()
    hints, sessions = [], set()
    for session, seq, score, content, name, last_at in rows:
        if score < min_score or len(hints) == HINTS:
            break
        root = session.split(":agent-")[0]
        if root in sessions:
            continue
        matched = _matched(terms, content)
        if matched < HINT_MIN_TERMS or matched < HINT_MIN_SHARE * len(terms):
            continue
        sessions.add(root)
        hints.append({"session_id": session, "seq": seq, "name": name, "last_at": last_at,
                      "score": round(score, 2), "matched": matched,
                      "text": content[:SNIPPET_CHARS + REDACT_MARGIN + 1]})
    return hints


COMMON_WORDS = 10_000   # words ``common_words`` remembers at most
COMMON_CHARS = 64       # ... each at most this long (a word that common is short)


def word_counts(conn, terms, names, found=None):
    """How many messages hold each of ``terms``, each counted up to ``MATCH_ROWS + 1`` (``count_matches``:
    a read bounded by the cap), or that cap at once for a word ``common_words`` knows reached it (the
    same number: a common word's count costs 0.1-0.2 ms a full-text table, a known one nothing). The
    words counted to the cap go into ``found`` (a list), to be remembered."""
    limit = MATCH_ROWS + 1
    keys = [_common_key(t) for t in terms]
    known = known_common(conn, [k for k in keys if k], limit)
    counts = []
    for term, key in zip(terms, keys):
        if key in known:
            counts.append(limit)
            continue
        counts.append(ftsparts.count_matches(conn, _quote(term), limit, names))
        if counts[-1] >= limit and key and found is not None:
            found.append(key)
    return counts


def _common_key(word):
    """The key a word is remembered by: lower case when ASCII (FTS5's unicode61 folds ASCII case the same
    way), else as typed; None when too long to keep."""
    if len(word) > COMMON_CHARS:
        return None
    return word.lower() if word.isascii() else word


def known_common(conn, keys, at_least):
    """The ``keys`` that ``common_words`` knows are held by at least ``at_least`` messages."""
    if not keys:
        return set()
    try:
        return {w for (w,) in conn.execute(f"SELECT word FROM common_words WHERE at_least >= ? AND word IN "
                                           f"({','.join('?' * len(keys))})", (at_least, *keys))}
    except apsw.SQLError:   # a journal this version has not migrated (a read-only copy): nothing known
        return set()


def remember_common(conn, keys):
    """Remember that ``keys`` reached the count cap (``common_words``), in a transaction of its own
    that waits for no other writer: a memo, skipped when the journal is busy, read-only, or the caller
    holds a transaction. Never raises."""
    if conn.in_transaction:
        return
    try:
        conn.set_busy_timeout(0)
        with Immediate(conn):
            conn.executemany("INSERT OR IGNORE INTO common_words (word, at_least) SELECT ?, ? "
                             "WHERE (SELECT count(*) FROM common_words) < ?",
                             [(k, MATCH_ROWS + 1, COMMON_WORDS) for k in keys])
    except apsw.Error:
        pass
    finally:
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)   # every journal connection's (``db.connect``)


BM25_K1 = 1.2   # FTS5's
ABLE_LOOKUPS = 16   # a table's rows able to reach the bar that are looked up one by one, at most


def _most_each(probed, counts, terms, size):
    """{word: the most it can add to a message's bm25}: idf x (k1 + 1), idf = ln((N - n + 0.5) / (n + 0.5))
    as FTS5 computes it (n: the messages holding it; N: ``size``, at least the messages indexed, so the bound
    holds: a word's share of bm25, tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)), is below k1 + 1); 0 for a
    word no message holds (before, its idf counted: a prompt with one word the journal lacks was ranked)."""
    held = dict(zip(terms, counts))
    return {t: max(math.log((size - held[t] + 0.5) / (held[t] + 0.5)), 1e-6) * (BM25_K1 + 1) if held[t] else 0.0
            for t in probed}


def _able(conn, names, most, counts, min_score):
    """{table: its messages whose bm25 can reach ``min_score``}: those whose words' ``most`` add up to it
    (each word's messages read again, as ``ftsparts.matching_rows`` finds them: ``counts`` says there are at
    most ``MATCH_ROWS`` for the words ``selective`` keeps; reading every word's while counting cost the hook
    0.6 ms a prompt on a small journal, where every word is common and nothing is ranked). None
    when any match can (a word alone can): then every match is ranked. At a million messages a prompt whose
    rarer words each match hundreds of messages had its 1,805 matches ranked (15 ms, a Python call each) to
    find none strong; now the messages holding enough of them are, often none."""
    if sum(most.values()) < min_score:
        return {}
    if max(most.values()) >= min_score or any(counts[t] > MATCH_ROWS for t in most):
        return None
    reach, table_of = {}, {}
    for word, bound in most.items():
        if counts[word]:
            for table, rows in ftsparts.matching_rows(conn, _quote(word), MATCH_ROWS + 1, names)[1].items():
                for row in map(int, rows.split(",")):
                    reach[row] = reach.get(row, 0.0) + bound
                    table_of[row] = table
    able = {}
    for row, bound in reach.items():
        if bound >= min_score:
            able.setdefault(table_of[row], []).append(row)
    return able


def _best_of_every_table(names, ranker, match, able=None):
    """(SQL, its arguments) of the ``HINT_ROWS`` best-ranked matches of ``match`` in each of the index's tables,
    as (rowid, rank); with ``able`` ({table: rowids}), only those rows of those tables: a few looked up one by
    one, more filtered from the table's matches (``+rowid``: FTS5 would parse and seek the whole expression
    again for each listed row)."""
    parts, args = [], []
    for n in names if able is None else [n for n in names if n in able]:
        only = ""
        args.append(match)
        if able is not None:
            only = f" AND {'rowid' if len(able[n]) <= ABLE_LOOKUPS else '+rowid'} IN (SELECT value FROM json_each(?))"
            args.append("[" + ",".join(str(int(r)) for r in sorted(able[n])) + "]")   # (no json module: the hook)
        parts.append(f"SELECT * FROM (SELECT rowid, {ranker.score(n)} AS rank FROM {n} WHERE {n} MATCH ?{only} "
                     f"ORDER BY rank LIMIT {HINT_ROWS})")
    return " UNION ALL ".join(parts), args


def _quote(word):
    return '"' + word.replace('"', '""') + '"'


def _matched(terms, content):
    """How many of ``terms`` the text holds (a prefix of each, so stems and plurals count)."""
    low = content.lower()
    return sum(1 for t in terms if t.lower()[:max(4, len(t) - 2)] in low)
