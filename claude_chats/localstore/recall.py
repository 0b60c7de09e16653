"""What the hook tells Claude: where its memory is, what compaction dropped, what looks related.

``session_context(conn, session_id, source)`` is the ``additionalContext`` of a
``SessionStart`` hook: after a compaction (``source`` "compact") it says that the
session's earlier turns are recorded in full, under which session id and sequence
range, how to read them back, and gives an index of what was compacted, built
from the journal without a model (the person's prompts one line each, files
edited, error lines, the assistant's last words), within ``BUDGET`` characters.
On "resume" the same pointer, without the index. On "startup" (a new session),
``startup_context`` names the project's most recent sessions (the ``startup_sessions``
setting). None when there is nothing to say.

``recall_hints(conn, prompt, session_id)`` is a cheap full-text probe of a prompt
against the other sessions (UserPromptSubmit): at most three one-line pointers,
and only when the best matches are strong (a wrong hint costs the person's
context window every turn: precision first).

Stdlib only and a handful of indexed queries: the hook runs this (and must stay
within tens of milliseconds).
"""

import math

from .. import transcript
from ..words import MATCH_ROWS, STOPWORDS, alnum_words, selective
from .db import session_name

_SESSION_NAME = session_name()

BUDGET = 2000              # characters of additionalContext (Claude Code accepts far more: keep it small)
PROMPT_CHARS = 110         # each prompt of the index, on one line
ERROR_CHARS = 140
FILES = 12
ERRORS = 4
LAST_WORDS = 2             # the assistant's last text messages before the compaction
SCAN = 600                 # messages read for files and errors (the last ones of the range)
SECTION = 420              # characters at most for each section but the prompts
EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
ERROR_MARKS = ("Error", "error:", "ERROR", "Traceback", "FAILED", "Exception", "fatal:", "panic:")
TOOLS_NOTE = ("get_conversation(session_id, start_seq, end_seq) and search_memory(query, session_id=...) "
              "of the conversation-memory MCP server")


def session_context(conn, session_id, source):
    """The hook's additionalContext for a SessionStart of ``source``, or None."""
    if source == "compact":
        return compaction_context(conn, session_id)
    if source == "resume":
        return resume_context(conn, session_id)
    return None


STARTUP_PROMPT_CHARS = 100


def startup_context(conn, session_id, project, count):
    """A new session's pointer to the ``count`` most recent other sessions of ``project`` (a person's,
    not subagents), newest first: date, name, id, size and the first prompt. None when there are none.

    Measured before it was made a default (scripts/bench_hints.py): a session's first
    prompt continues one of the three it names about a quarter of the time, and those are most of
    the continuations the recall hints miss; it costs once per session, not per turn."""
    if not count or not project:
        return None
    rows = conn.execute(
        f"SELECT s.id, {_SESSION_NAME}, coalesce(s.last_at, s.first_at), "
        f"(SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.copy = 0), "
        f"(SELECT substr(content, 1, 400) FROM messages m WHERE m.session_id = s.id AND m.role = 'user' "
        f"AND m.kind = ? ORDER BY m.seq LIMIT 1) "
        f"FROM sessions s WHERE s.project_path = ? AND s.parent_session_id IS NULL AND s.machine_made = 0 "
        f"AND s.id != ? ORDER BY coalesce(s.last_at, s.first_at) DESC LIMIT ?",
        (transcript.TEXT, project, session_id or "", count)).fetchall()
    lines = [f"- {(when or '')[:10]} " + (f"\"{_line(name, 60)}\" " if name else "") +
             f"session_id {sid}, {size} messages" + (f": {_line(first, STARTUP_PROMPT_CHARS)}" if first else "")
             for sid, name, when, size, first in rows if size]
    if not lines:
        return None
    return "\n".join(["[claude-chats] The latest sessions of this project are recorded in full (read one with "
                      "get_conversation(session_id) or search them with search_memory(query, "
                      "project_path=\"current\") of the conversation-memory MCP server when the person picks "
                      "up earlier work):"] + lines)


def compaction_context(conn, session_id):
    """After a compaction: the pointer to the full record of what was compacted, and its index."""
    span = _compacted_span(conn, session_id)
    if span is None:
        return None
    start, end, count = span
    head = (f"[claude-chats] This conversation was just compacted, but every earlier turn is recorded in full: "
            f"session_id {session_id}, messages seq {start} to {end} ({count} messages). Read them back with "
            f"get_conversation(session_id=\"{session_id}\", start_seq={start}, end_seq={end}) or look something up "
            f"with search_memory(query, session_id=\"{session_id}\") (the conversation-memory MCP tools) when the "
            f"summary lacks a detail: an error message, a constraint, what was tried first.")
    rows = conn.execute("SELECT seq, role, kind, substr(content, 1, 4000) FROM messages WHERE session_id = ? "
                        "AND seq BETWEEN ? AND ? AND copy = 0 ORDER BY seq", (session_id, start, end)).fetchall()
    return _fit(head, _index(rows))


def resume_context(conn, session_id):
    """On a resume: the pointer to the recorded session."""
    row = conn.execute("SELECT count(*), min(seq), max(seq) FROM messages WHERE session_id = ?",
                       (session_id,)).fetchall()[0]
    if not row[0]:
        return None
    return (f"[claude-chats] This resumed conversation is recorded in full: session_id {session_id}, "
            f"{row[0]} messages (seq {row[1]} to {row[2]}). Earlier details can be read back with {TOOLS_NOTE}.")


def _compacted_span(conn, session_id):
    """(first seq, last seq, messages) of what the latest compaction of the session dropped from view:
    everything after the compaction before it (or from the start) up to its boundary.

    In interactive mode Claude Code fires SessionStart(compact) before the compaction's boundary line
    reaches the transcript (observed with 2.1.332: tests/claude_code/test_memory_reach.py). A turn
    stored after the latest boundary says so: then this compaction's boundary is still to come, and
    the span runs from that boundary to the last message stored."""
    bounds = [seq for (seq,) in conn.execute(
        "SELECT seq FROM messages WHERE session_id = ? AND kind = ? ORDER BY seq DESC LIMIT 2",
        (session_id, transcript.COMPACT_BOUNDARY))]
    latest = bounds[0] if bounds else -1
    pending = conn.execute(
        "SELECT max(seq) FROM messages WHERE session_id = ? AND seq > ? AND kind IN (?, ?, ?)",
        (session_id, latest, transcript.TEXT, transcript.TOOL_USE, transcript.TOOL_RESULT)).fetchall()[0][0]
    if pending is not None:   # turns after the latest boundary (or no boundary at all): the new one is coming
        start, end = latest + 1, conn.execute("SELECT max(seq) FROM messages WHERE session_id = ?",
                                              (session_id,)).fetchall()[0][0]
    elif bounds:
        start, end = (bounds[1] + 1 if len(bounds) > 1 else 0), latest - 1
    else:
        return None
    count = conn.execute("SELECT count(*) FROM messages WHERE session_id = ? AND seq BETWEEN ? AND ?",
                         (session_id, start, end)).fetchall()[0][0]
    return (start, end, count) if count else None


def _index(rows):
    """Sections of the compacted turns' index: [(title, [lines])], most useful first."""
    prompts = [(seq, _line(text, PROMPT_CHARS)) for seq, role, kind, text in rows
               if role == "user" and kind == transcript.TEXT]
    edited, errors, seen = [], [], set()
    for seq, role, kind, text in rows[-SCAN:]:
        if kind == transcript.TOOL_USE:
            name, _, arg = text.partition("] ")
            if name.lstrip("[") in EDIT_TOOLS and arg and arg not in edited:
                edited.append(arg.split(" ", 1)[0])
        elif kind == transcript.TOOL_RESULT and any(mark in text for mark in ERROR_MARKS):
            line = _error_line(text)
            if line and line not in seen:
                seen.add(line)
                errors.append((seq, line))
    last = [(seq, _line(text, 220)) for seq, role, kind, text in rows
            if role == "assistant" and kind == transcript.TEXT][-LAST_WORDS:]
    return [("the person's prompts", [f"#{seq} {text}" for seq, text in prompts]),
            ("files edited", [", ".join(dict.fromkeys(edited[-FILES:]))] if edited else []),
            ("errors seen", [f"#{seq} {line}" for seq, line in errors[-ERRORS:]]),
            ("the assistant's last words before the compaction", [f"#{seq} {text}" for seq, text in last])]


def _fit(head, sections):
    """``head`` and as much of the index as fits ``BUDGET``. The short sections get their room first
    (at most ``SECTION`` characters each), the prompts what is left: they keep the first and the
    latest ones (the request and the turns just before the compaction) and lose the middle."""
    first, rest = sections[0], sections[1:]
    blocks = [_block(title, items, SECTION) for title, items in rest]
    room = BUDGET - len(head) - sum(len(b) for b in blocks)
    return (head + _block(*first, room) + "".join(blocks))[:BUDGET]


def _block(title, items, room):
    lines = _keep_ends(items, room - len(title) - 4) if items else []
    return f"\n{title}:\n" + "\n".join(f"- {line}" for line in lines) if lines else ""


def _keep_ends(items, room):
    """As many of ``items`` as fit in ``room`` characters: the first, then the latest ones, the middle
    dropped with a marker."""
    if sum(len(item) + 3 for item in items) <= room:
        return items
    first, rest = items[0], items[1:]
    used = len(first) + 3 + 20
    if used > room:
        return []
    tail = []
    for item in reversed(rest):
        if used + len(item) + 3 > room:
            break
        tail.append(item)
        used += len(item) + 3
    skipped = len(rest) - len(tail)
    return [first] + ([f"... {skipped} more"] if skipped else []) + tail[::-1]


def _line(text, limit):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _error_line(text):
    for line in text.splitlines():
        if any(mark in line for mark in ERROR_MARKS):
            return _line(line.strip(), ERROR_CHARS)
    return None


# -- recall hints (UserPromptSubmit) ---------------------------------------------------------

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
    """Up to ``HINTS`` other sessions whose best message strongly matches ``prompt``:
    ``[{session_id, seq, name, last_at, score, matched, snippet}]``, best first; [] when none is strong.

    A strong match: the message's bm25 reaches ``strength`` x ln(journal size) and it holds at least
    ``HINT_MIN_TERMS`` and ``HINT_MIN_SHARE`` of the prompt's words. The current session and its
    subagents, a fork's copies, tool output and machine-made sessions (scripts, SDK runs) are left
    out: a hint must point somewhere new, and somewhere a person was.
    """
    terms = prompt_terms(prompt)
    if len(terms) < HINT_MIN_TERMS:
        return []
    size = conn.execute("SELECT max(id) FROM messages").fetchall()[0][0] or 0
    min_score = strength * math.log(max(size, 2))
    counts = [conn.execute("SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)",
                           (_quote(t), MATCH_ROWS + 1)).fetchall()[0][0] for t in terms]   # each read bounded
    probed, how = selective(terms, counts, size)   # as search does: the rarest words when all would match too much
    if how == "all" or _best_possible(probed, counts, terms, size) < min_score:
        return []   # only common words: nothing specific to point at, and no need to rank them
    match = " OR ".join(_quote(t) for t in probed)
    current = session_id or ""
    rows = conn.execute(
        f"SELECT m.session_id, m.seq, -f.rank, m.content, {_SESSION_NAME}, coalesce(s.last_at, s.first_at) "
        f"FROM (SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT {HINT_ROWS}) f "
        f"JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id "
        f"WHERE m.copy = 0 AND s.machine_made = 0 AND m.kind IN ({','.join('?' * len(HINT_KINDS))}) "
        f"AND m.session_id != ? "
        f"AND coalesce(s.parent_session_id, '') != ? ORDER BY f.rank LIMIT 40",
        (match, *HINT_KINDS, current, current)).fetchall()
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
                      "score": round(score, 2), "matched": matched, "snippet": _line(content, SNIPPET_CHARS)})
    return hints


BM25_K1 = 1.2   # FTS5's


def _best_possible(probed, counts, terms, size):
    """The highest bm25 a message could reach on ``probed``: a word adds at most idf x (k1 + 1),
    idf = ln((N - n + 0.5) / (n + 0.5)) as FTS5 computes it (n: the messages holding it)."""
    held = dict(zip(terms, counts))
    return sum(max(math.log((size - held[t] + 0.5) / (held[t] + 0.5)), 1e-6) * (BM25_K1 + 1) for t in probed)


def _quote(word):
    return '"' + word.replace('"', '""') + '"'


def hint_context(hints):
    """The additionalContext of a prompt's hints (one line each)."""
    lines = ["[claude-chats] Earlier sessions look related to this prompt (read with get_conversation or "
             "search_memory of the conversation-memory MCP server, if they matter):"]
    for h in hints:
        when = (h["last_at"] or "")[:10]
        title = f"\"{_line(h['name'], 60)}\" " if h["name"] else ""
        lines.append(f"- {title}{when} session_id {h['session_id']} seq {h['seq']}: {h['snippet']}")
    return "\n".join(lines)


def _matched(terms, content):
    """How many of ``terms`` the text holds (a prefix of each, so stems and plurals count)."""
    low = content.lower()
    return sum(1 for t in terms if t.lower()[:max(4, len(t) - 2)] in low)
