"""Kept transcript lines in the journal, packed to refer to their messages' text (``rawlines.refer``).

A kept line (``raw_lines``) holds again the text of the messages made from it, most of its bytes.
``pack_line`` packs a line with each such text left as a reference to its message (``packed`` =
``rawlines.REFERRING``), or whole when none is in it; ``read_line`` gives back the line's bytes from
any stored form. The messages a line may refer to are its own: the same session, the line's key as
their uuid or its start (``<uuid>#<n>``, ``<uuid>@<session>``), and the same time. So a purge, which
deletes a session's messages with its lines, or those up to a time with the lines up to that time
(``erase``), never leaves a line whose message is gone; a redaction that rewrites a message rewrites
its line too. A line whose message is missing all the same (a journal changed by hand) is an
``UnpackError``, never another text.

Not on the hook's path: the hook stores lines as it read them, ``chats sync`` and ``chats import``
pack them.
"""

from .. import rawlines
from . import stamps, uuids
from .db import NUMBER, number_of

# the messages made from a line: a range of messages.uuid ('#' and '@' sort before 'A'), through its index
# ('+': left to itself, the planner walked the session's messages, 17 against 5 us a line on the shared corpus)
_TEXTS = ("SELECT id, chats_text(content) FROM messages WHERE uuid >= ?1 AND uuid < ?4 "
          f"AND +session = {number_of('?2')} AND created_at IS ?3")
_BATCH = 500


def pack_line(conn, session, key, created_at, raw):
    """``(blob, packed)``: the line packed referring to its messages' text and its row's own fields
    (``rawlines.refer_line``), or packed whole."""
    start = uuids.pack(key)   # (``after`` of the packed form: packed once)
    texts = conn.execute(_TEXTS, (start, session, stamps.pack(created_at), uuids.after(start))).fetchall() if key else []
    marked = rawlines.refer_line(raw, texts, rawlines.own_values(key, session, created_at))
    if marked is None:
        return rawlines.pack(raw), 1
    return rawlines.pack_referring(marked), rawlines.REFERRING


def read_line(conn, session, key, created_at, blob, packed, limit=rawlines.LINE_LIMIT):
    """The line's bytes from a row of ``raw_lines`` (its session, key, created_at, line and packed;
    ``UnpackError`` when they cannot be had)."""
    if packed != rawlines.REFERRING:
        return rawlines.unpack(blob, limit)
    marked = rawlines.unpack_referring(blob, limit)
    own = rawlines.own_values(key, session, created_at) if rawlines.refers_own(blob) else None
    return rawlines.rebuild(marked, texts_of(conn, session, rawlines.referred(marked)), limit, own)


def texts_of(conn, session, ids):
    """``{id: content}`` of the messages ``ids`` of ``session`` (another session's are not given)."""
    ids, found = sorted(ids), {}
    for start in range(0, len(ids), _BATCH):
        part = ids[start:start + _BATCH]
        found.update(conn.execute(f"SELECT id, chats_text(content) FROM messages WHERE session = {NUMBER} AND id IN "
                                  f"({','.join('?' * len(part))})", [session, *part]))
    return found


def reader(conn):
    """``read(session, key, blob, (packed, created_at), limit)`` for ``rawlines.unpack_rows``."""
    def read(session, key, blob, extra, limit):
        packed, created_at = extra
        return read_line(conn, session, key, created_at, blob, packed, limit)
    return read
