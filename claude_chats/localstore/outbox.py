"""What sync reads from and writes to the journal, beyond ``Journal``'s own methods.

Functions over the journal's apsw connection (``journal.conn``): the sessions a
batch needs as ``records.Conversation``, sessions renamed since their last push
and the bookkeeping that a session version reached Postgres, and each message's
previous text message (the embedded text's context). The vectors
sync keeps in the journal are ``vectors.LocalVectors``'s (not imported here: numpy is
not for ``chats status``, which reads this module's states).
"""

import json
import re
import time
from datetime import datetime

from .. import rawlines, times
from ..records import Conversation, Message, RawLine
from . import counts, db, ftsparts, keptlines, stamps, texts, uuids
from .db import Immediate

_CONVERSATION_SQL = f"""
SELECT id, project_path, git_branch, {db.session_name(None)}, first_at, last_at,
       parent_session_id, agent_id, machine, updated_at, entrypoint, machine_made
FROM sessions"""


def conversations(conn, session_ids):
    """``records.Conversation`` of each session id (unknown ids are left out)."""
    ids = sorted(set(session_ids))
    if not ids:
        return []
    rows = conn.execute(f"{_CONVERSATION_SQL} WHERE id IN (SELECT value FROM json_each(?))",
                        (json.dumps(ids),)).fetchall()
    return [_conversation(row) for row in rows]


def unpushed_sessions(conn, limit=1000):
    """Sessions whose current version never reached Postgres (new, or renamed since)."""
    rows = conn.execute(f"{_CONVERSATION_SQL} WHERE synced_at IS NULL OR synced_at < updated_at "
                        "ORDER BY id LIMIT ?", (limit,)).fetchall()
    return [_conversation(row) for row in rows]


def mark_sessions_pushed(conn, conversations_):
    """Record that these session versions are in Postgres (``synced_at`` = pushed ``updated_at``).

    Only rows still exactly as pushed are marked: a session renamed while the
    push ran stays due and goes again next time.
    """
    rows = [(c.updated_at, c.session_id, c.updated_at, c.name, c.git_branch, c.project_path)
            for c in conversations_]
    with Immediate(conn):
        conn.executemany(
            "UPDATE sessions SET synced_at = ? WHERE id = ? AND updated_at = ? "
            f"AND {db.session_name(None)} IS ? AND git_branch IS ? AND project_path IS ?", rows)


def as_messages(pending_rows, redact=None):
    """``records.Message`` for rows of ``Journal.pending``; ``redact`` cleans the text first."""
    out = []
    for r in pending_rows:
        content = redact(r["content"]) if redact else r["content"]
        words = token_count(r.get("fts_size")) if content == r["content"] else None   # redacted: counted anew
        out.append(Message(r["uuid"], r["session_id"], r["seq"], r["role"], r["kind"], content,
                           timestamp(r["created_at"]), bool(r["copy"]), words))
    return out


def token_count(size):
    """The message's length in tokens from FTS5's docsize record (a varint per column: one column
    here), or None: what the journal's bm25 uses as the document length, read rather than counted."""
    if not size:
        return None
    value = 0
    for byte in size[:9]:
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return None


_ISO = re.compile(r"\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d{1,6})?)?)?(Z|[+-]\d\d(:?\d\d)?)?")


def timestamp(value):
    """``value`` if it is an ISO-8601 timestamp Postgres will accept, else None.

    One malformed timestamp must not make a whole batch fail forever.
    """
    if value is None or not _ISO.fullmatch(value):
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return None
    return value


def _conversation(row):
    (sid, project, branch, name, first, last, parent, agent, machine, updated, entrypoint, machine_made) = row
    return Conversation(sid, project, branch, name, timestamp(first), timestamp(last), parent, agent,
                        machine, timestamp(updated), entrypoint, bool(machine_made))


PACK_BATCH = 500


def _whole_rows(conn, table):
    """``(columns, INSERT of a whole row)`` of ``table``, for ``_write_again``."""
    columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    return columns, f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"


def _write_again(conn, table, insert, rows, id_at):
    """``rows`` of ``table`` (whole, by id, every row between the first and the last) deleted and inserted
    again as given, with the same ids, so that their pages are written full: a row made smaller where it
    is leaves its page as big as it was (SQLite balances a page on a delete, never on an update)."""
    conn.execute(f"DELETE FROM {table} WHERE id BETWEEN ? AND ?", (rows[0][id_at], rows[-1][id_at]))
    conn.executemany(insert, rows)


def pack_raw_lines(conn, batch=PACK_BATCH):
    """Compress the kept lines the hook stored as it read them, each referring to its messages' text
    where it holds it (``keptlines``); returns how many.

    A transaction takes ``batch`` rows from the first unpacked one and writes them all again, the unpacked
    ones packed (``_write_again``: ``raw_lines`` has no trigger). Packed in place, the hook's lines of the
    shared corpus took 10.0 MB of pages for 4.8 MB of rows; imported (packed as written), 5.1."""
    columns, insert = _whole_rows(conn, "raw_lines")
    at = {name: columns.index(name) for name in ("id", "session", "key", "created_at", "line", "packed")}
    done = 0
    while True:
        with Immediate(conn):
            first = conn.execute("SELECT min(id) FROM raw_lines WHERE packed = 0").fetchall()[0][0]
            if first is None:
                return done
            rows = [list(r) for r in conn.execute(f"SELECT {', '.join(columns)} FROM raw_lines WHERE id >= ? "
                                                  "ORDER BY id LIMIT ?", (first, batch))]
            names = session_ids(conn, {row[at["session"]] for row in rows if row[at["packed"]] == 0})
            for row in rows:
                if row[at["packed"]] != 0:
                    continue
                line = row[at["line"]]
                row[at["line"]], row[at["packed"]] = (None, 1) if line is None else keptlines.pack_line(
                    conn, names[row[at["session"]]], uuids.unpack(row[at["key"]]), stamps.unpack(row[at["created_at"]]),
                    line)
                done += 1
            _write_again(conn, "raw_lines", insert, rows, at["id"])


TEXTS_BATCH = 500      # messages a transaction of ``pack_old_texts`` writes again: the hook waits for one at most
#                        (at 1M, 75 ms p50, 103 p99; 2,000 took ~250 ms, and the whole run as long: 134 against 127 s)
TEXTS_UPTO = "texts_packed_upto"   # state: the messages up to this id are packed, or stay as written for good


def pack_old_texts(conn, now=None, batch=TEXTS_BATCH, on_step=None):
    """Pack the text of the messages older than ``texts.PACK_AFTER`` (by ``created_at``; a message without a
    time, or with one more than a day ahead, is old), from where the last run left (``TEXTS_UPTO``: it stays
    before the first message kept for its age). ``on_step(packed, looked at)`` after each transaction;
    returns ``(messages packed, bytes saved)``.

    A transaction takes the next ``batch`` messages and, when one of them is packed, writes them all again
    as they were but for the packed texts (``_write_again``: packed in place, the journal would not shrink
    at all), the triggers on messages and the foreign keys off on this connection alone (the full-text
    index, the counts, the vectors and the kept lines refer to the same ids and the same text)."""
    if conn.in_transaction:   # (PRAGMA foreign_keys does nothing inside one: the deletes would take the vectors)
        raise RuntimeError("pack_old_texts runs outside a transaction")
    if not ftsparts.triggers_read_packed(conn):   # the index's triggers of a version before: written anew first
        with Immediate(conn):
            ftsparts.write_triggers(conn)
    now = time.time() if now is None else now
    cutoff, ahead = times.iso_at(now - texts.PACK_AFTER), times.iso_at(now + texts.PACK_AFTER)
    after = int(db.get_state(conn, TEXTS_UPTO) or 0)
    top = conn.execute("SELECT max(id) FROM messages").fetchall()[0][0] or 0
    columns, insert = _whole_rows(conn, "messages")
    at = columns.index("content"), columns.index("created_at"), columns.index("id")
    held = None
    packed = saved = seen = 0
    conn.execute("PRAGMA foreign_keys = OFF")   # (chunks and final answers cascade from their message)
    texts.repacking(conn, True)
    try:
        if conn.execute("PRAGMA foreign_keys").fetchall()[0][0]:
            raise RuntimeError("the journal's foreign keys stay on: nothing packed")
        while after < top:
            with Immediate(conn):
                rows = conn.execute(f"SELECT {', '.join(columns)} FROM messages WHERE id > ? AND id <= ? "
                                    "ORDER BY id LIMIT ?", (after, top, batch)).fetchall()
                if not rows:
                    break
                rows, changed = [list(r) for r in rows], 0
                for row in rows:
                    content, created = row[at[0]], stamps.unpack(row[at[1]])
                    if not isinstance(content, str):
                        continue
                    if created is not None and cutoff <= created <= ahead:
                        held = row[at[2]] if held is None else held
                        continue
                    blob = texts.pack(content)
                    if blob is not None:
                        row[at[0]] = blob
                        changed += 1
                        saved += len(content.encode("utf-8", "surrogatepass")) - len(blob)
                if changed:
                    _write_again(conn, "messages", insert, rows, at[2])
                after = rows[-1][at[2]]
                db.set_state(conn, TEXTS_UPTO, str(after if held is None else held - 1))
            packed, seen = packed + changed, seen + len(rows)
            if on_step:
                on_step(packed, seen)
    finally:
        texts.repacking(conn, False)
        conn.execute("PRAGMA foreign_keys = ON")
    return packed, saved


REFERRED_UPTO = "kept_lines_referred_upto"   # state: kept lines packed whole, looked at up to this id
REFER_PER_RUN = 20_000                        # of them a sync looks at (about 1 s; a year's journal in ~60 runs)


def refer_packed_lines(conn, at_most=REFER_PER_RUN, batch=PACK_BATCH):
    """Kept lines a version before referring lines packed whole, packed again referring to their
    messages' text where they can (``keptlines``), oldest first, at most ``at_most`` a run, so a year's
    journal shrinks over a few scheduled syncs without one long one; returns how many were looked at.
    A row changed meanwhile (a redaction) is left for what changed it; one that cannot be unpacked, as it is."""
    upto = int(db.get_state(conn, REFERRED_UPTO) or 0)
    seen = 0
    while seen < at_most:
        rows = conn.execute("SELECT r.id, n.session_id, chats_uuid(r.key), chats_time(r.created_at), r.line FROM raw_lines r "
                            "JOIN session_numbers n ON n.number = r.session WHERE r.id > ? AND r.packed = 1 "
                            "AND r.line IS NOT NULL ORDER BY r.id LIMIT ?", (upto, min(batch, at_most - seen))).fetchall()
        if not rows:
            return seen
        with Immediate(conn):
            changed = []
            for rid, session, key, created, line in rows:
                try:
                    raw = rawlines.unpack(line)
                except rawlines.UnpackError:
                    continue
                blob, packed = keptlines.pack_line(conn, session, key, created, raw)
                if packed == rawlines.REFERRING:
                    changed.append((blob, packed, rid, line))
            conn.executemany("UPDATE raw_lines SET line = ?, packed = ? WHERE id = ? AND line = ?", changed)
            upto = rows[-1][0]
            db.set_state(conn, REFERRED_UPTO, str(upto))
        seen += len(rows)
    return seen


def raw_line_rows(conn, limit=500, after_id=0):
    """The rows of the kept lines not yet in Postgres, oldest first (``id > after_id``): ``(id,
    session, key, seq, parent, line, created_at)``, the line as stored, or its bytes (unpacked) when it
    refers to its messages' text: Postgres gets every line whole."""
    rows = conn.execute("SELECT r.id, n.session_id, chats_uuid(r.key), r.seq, r.parent, r.line, chats_time(r.created_at), r.packed "
                        "FROM raw_lines r JOIN session_numbers n ON n.number = r.session "
                        "WHERE r.synced = 0 AND r.id > ? ORDER BY r.id LIMIT ?", (after_id, limit)).fetchall()
    return [row[:7] if row[7] != rawlines.REFERRING else
            (*row[:5], keptlines.read_line(conn, row[1], row[2], row[6], row[5], row[7]), row[6]) for row in rows]


def session_ids(conn, keys):
    """``{number: session id}`` of these ``session_numbers`` numbers (the kept lines name their session by one)."""
    return dict(conn.execute("SELECT number, session_id FROM session_numbers WHERE number IN (SELECT value FROM json_each(?))",
                             (json.dumps(sorted(int(k) for k in keys)),)))


def raw_line_records(rows, lines):
    """``(ids, [records.RawLine])`` of ``raw_line_rows``' rows with the lines as they are pushed."""
    return [row[0] for row in rows], [RawLine(session, key, seq, parent, line, timestamp(created))
                                      for (_id, session, key, seq, parent, _stored, created), line in zip(rows, lines)]


def pending_raw_line_count(conn, at_most):
    """Kept lines not yet in Postgres, counted up to ``at_most`` (enough to know a backlog is big)."""
    return conn.execute("SELECT count(*) FROM (SELECT 1 FROM raw_lines WHERE synced = 0 LIMIT ?)",
                        (int(at_most),)).fetchall()[0][0]


# Kept lines that versions before issue 21 pushed may hold values named as secrets only by their JSON
# keys: "pending" once this journal's first sync with key-aware redaction found that it had pushed lines
# and Postgres holds some, "checked" when it found nothing to clean, "done" after `chats redact --postgres`.
KEYED_REDACTION_STATE = "raw_lines_keyed_redaction"


def keyed_redaction(conn):
    """``None`` (not checked yet), ``"pending"``, ``"checked"`` or ``"done"`` (see above)."""
    return db.get_state(conn, KEYED_REDACTION_STATE)


def set_keyed_redaction(conn, value):
    db.set_state(conn, KEYED_REDACTION_STATE, value)


def has_pushed_raw_lines(conn):
    """Whether any kept line of this journal was pushed (asked once: a scan when none was)."""
    return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM raw_lines WHERE synced = 1)").fetchall()[0][0])


def mark_raw_lines_pushed(conn, ids):
    with Immediate(conn):
        conn.executemany("UPDATE raw_lines SET synced = 1 WHERE id = ?", [(i,) for i in ids])


def present(conn, message_ids):
    """The ids of ``message_ids`` still in the journal, in the given order (a purge removes messages
    under a running sync)."""
    ids = [int(i) for i in message_ids]
    found = {row[0] for row in conn.execute("SELECT id FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                                            (json.dumps(ids),))}
    return [i for i in ids if i in found]


def pending_count(conn):
    """Messages not pushed yet, from the journal's counters (``counts``)."""
    return counts.messages(conn)[1]


# The indexes of what waits for Postgres: in a journal that has no Postgres to go to, every message and
# kept line waits for good, so both indexes are as big as their tables' id columns (27 bytes a message
# at 1M) and serve nothing. ``chats sync`` keeps them only while a Postgres is configured, and makes
# them again before its first push (4.7 s for both at 1M, 0.4 s to drop them).
PENDING_INDEXES = {
    "messages_pending": "CREATE INDEX IF NOT EXISTS messages_pending ON messages(id) WHERE synced = 0",
    "raw_lines_pending": "CREATE INDEX IF NOT EXISTS raw_lines_pending ON raw_lines(id) WHERE synced = 0",
}


def keep_pending_indexes(conn, wanted):
    """Make the pending indexes when ``wanted`` (a Postgres is configured), else drop them; the names
    changed. A drop is a statement of its own (no statement journal of its pages: ``db.drop_leftovers``)."""
    present = {name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name IN (SELECT value FROM json_each(?))",
        (json.dumps(list(PENDING_INDEXES)),))}
    changed = []
    for name, create in PENDING_INDEXES.items():
        if wanted and name not in present:
            with Immediate(conn):
                conn.execute(create)
            changed.append(name)
        elif not wanted and name in present:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
            changed.append(name)
    return changed


_PREVIOUS_SQL = """
SELECT m.id, p.id, p.role, chats_text(p.content) FROM json_each(?) j
JOIN messages m ON m.id = j.value
JOIN messages p ON p.id = (SELECT q.id FROM messages q WHERE q.session = m.session
                           AND q.seq < m.seq AND q.kind = 'text' ORDER BY q.seq DESC LIMIT 1)"""


def previous_messages(conn, message_ids):
    """``{message id: (previous id, role, content)}``: each message's session's last text message
    before it in the journal (``conn``, apsw), wherever it is; messages without one are left out."""
    rows = conn.execute(_PREVIOUS_SQL, (json.dumps([int(i) for i in message_ids]),)).fetchall()
    return {m: (p, role, content) for m, p, role, content in rows}
