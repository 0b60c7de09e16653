"""What the hook tells Claude at a session's start: where its memory is, and what compaction dropped.

``session_context(conn, session_id, source)`` is the ``additionalContext`` of a
``SessionStart`` hook: after a compaction (``source`` "compact") it says that the
session's earlier turns are recorded in full, under which session id and sequence
range, how to read them back, and gives an index of what was compacted, built
from the journal without a model (the person's prompts one line each, files
edited, error lines, the assistant's last words), within ``BUDGET`` characters.
On "resume" the same pointer, without the index. None when there is nothing to say.

Stdlib only and a handful of indexed queries: the hook runs this (and must stay
within tens of milliseconds).
"""

from .. import transcript

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
    everything after the compaction before it (or from the start) up to its boundary."""
    bounds = [seq for (seq,) in conn.execute(
        "SELECT seq FROM messages WHERE session_id = ? AND kind = ? ORDER BY seq DESC LIMIT 2",
        (session_id, transcript.COMPACT_BOUNDARY))]
    if not bounds:
        return None
    end = bounds[0] - 1
    start = bounds[1] + 1 if len(bounds) > 1 else 0
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
