"""The journal's write path: transcript bytes after the saved cursor -> rows.

Used by the hook (every turn) and by ``chats import`` (backfill). Stdlib + apsw
+ the parser only: the caller passes the redaction to apply, if any (the
``journal_redact`` setting: then message text, session names and summaries are
stored redacted). Each chunk is written in one BEGIN IMMEDIATE transaction that
also moves the file's cursor, so a crash anywhere leaves either the old cursor
and no rows, or the new cursor and all rows; re-reads are harmless because the
message uuid is the identity. ``erase.redact_stored`` rewrites what is already
stored (``chats redact --journal``).
"""

import os
import stat
import time

from .. import jsonl, rawlines, transcript
from ..times import now_iso
from . import stamps, texts, uuids
from .db import NUMBER, Immediate, get_state, set_state

CHUNK_BYTES = 8 << 20   # import reads big files in pieces so the write lock is held briefly


class IngestStats:
    """Counts of one ingest run, and what every transaction of the run shares.

    ``redact``: text -> text applied to what is stored (``None``: the original), or
    ``resolve_redact()`` giving it, called once when something is first stored
    (the hook reads the setting only on turns that store).
    ``before_commit(conn, stats)``: run inside each write transaction, last
    (the hook records its ``last_hook`` state there instead of in one more
    transaction). ``machine_made``: every session stored is flagged machine-made, whatever its
    ``entrypoint`` (the hook under ``CLAUDE_CHATS_MACHINE_MADE=1``). ``exclude``: a
    ``capture.ProjectFilter`` of the ``exclude_projects`` setting (None: no project is excluded).
    ``pack``: ``(conn, session, key, created_at, bytes) -> (blob, packed)`` compressing each kept line as
    it is stored (``chats import``: ``keptlines.pack_line``, after the line's messages); None: stored as
    read, for ``chats sync`` to compress (the hook: no zlib).
    """

    __slots__ = ("files", "bytes", "messages", "duplicates", "skipped", "sessions", "errors", "commits",
                 "redact", "resolve_redact", "before_commit", "machine_made", "exclude", "pack")

    def __init__(self, redact=None, resolve_redact=None, before_commit=None, machine_made=False, exclude=None,
                 pack=None):
        self.files = self.bytes = self.messages = self.duplicates = self.commits = 0
        self.skipped, self.sessions, self.errors = {}, set(), []
        self.redact, self.resolve_redact, self.before_commit = redact, resolve_redact, before_commit
        self.machine_made, self.exclude, self.pack = machine_made, exclude, pack

    def redactor(self):
        if self.resolve_redact is not None:
            self.redact, self.resolve_redact = self.resolve_redact(), None
        return self.redact

    def add_skips(self, skipped):
        for reason, count in skipped.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + count

    def as_dict(self):
        return {"files": self.files, "bytes": self.bytes, "sessions": len(self.sessions),
                "messages": self.messages, "duplicates": self.duplicates,
                "skipped": sum(self.skipped.values()), "skipped_by_reason": dict(sorted(self.skipped.items())),
                "errors": list(self.errors)}


def machine_name():
    return os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "unknown")


def ingest_file(conn, path, stats=None, machine=None, chunk_bytes=CHUNK_BYTES):
    """Read ``path`` from its saved offset and store what is new. Returns ``stats``."""
    stats = stats if stats is not None else IngestStats()
    path = os.path.abspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return stats
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the hook, a device never end
        raise OSError(f"not a regular file: {path}")
    cursor = _cursor(conn, path)
    if cursor and cursor[1] == st.st_dev and cursor[2] == st.st_ino and cursor[3] == st.st_size:
        return stats  # nothing new: no write transaction at all
    if cursor is None and os.path.basename(path).startswith("agent-"):
        _session_first(conn, path, stats, machine)
    stats.files += 1
    machine = machine or machine_name()
    with open(path, "rb") as fh:
        while True:
            done = _ingest_chunk(conn, path, fh, stats, machine, chunk_bytes)
            if done:
                break
    return stats


def _session_first(conn, path, stats, machine):
    """A subagent's file read before its session's (``chats import`` of it alone): the session's is
    read first, so what it keeps out (its markers, its project) holds for the subagent too."""
    parent = parent_transcript(path)
    if parent is None:
        with open(path, "rb") as fh:
            parent = parent_transcript(path, fh.read(1 << 16))
    if parent is not None and not os.path.basename(parent).startswith("agent-") and os.path.isfile(parent) \
            and _cursor(conn, parent) is None:
        ingest_file(conn, parent, stats, machine)


def _cursor(conn, path):
    rows = conn.execute("SELECT id, device, inode, offset, warmup, tail, last_uuid, capture FROM transcripts "
                        "WHERE path = ?", (path,)).fetchall()
    return rows[0] if rows else None


TAIL_BYTES = 64


CHECKSUM = b"\x00fnv64:"   # a tail kept as its checksum (no line ends with a NUL)


def _tail(fh, offset, checksum=False):
    """The (at most ``TAIL_BYTES``) bytes just before ``offset``: where the last stored line ended;
    ``checksum``: their checksum instead (``rawlines.checksum``: no zlib on the hook's path), for a file whose lines are kept out (their text must not be
    stored, even 64 bytes of it)."""
    start = max(0, offset - TAIL_BYTES)
    fh.seek(start)
    tail = fh.read(offset - start)
    return tail_checksum(tail) if checksum else tail


def tail_checksum(tail):
    return CHECKSUM + b"%016x" % rawlines.checksum(tail)


def _ingest_chunk(conn, path, fh, stats, machine, chunk_bytes):
    """One transaction: read from the cursor, parse, write, move the cursor. True when at EOF."""
    with Immediate(conn):
        st = os.fstat(fh.fileno())
        cursor = _cursor(conn, path)
        same_file = cursor is not None and cursor[1] == st.st_dev and cursor[2] == st.st_ino
        offset = cursor[3] if same_file and cursor[3] <= st.st_size else 0
        if offset and cursor[5] is not None and _tail(fh, offset, cursor[5].startswith(CHECKSUM)) != cursor[5]:
            offset = 0   # rewritten in place: what was before the offset is not what was read
        warmup = cursor[4] if same_file and offset else None
        if cursor is None:
            file_id = conn.execute(
                "INSERT INTO transcripts (path, device, inode, offset, updated_at) VALUES (?, ?, ?, 0, ?) "
                "RETURNING id", (path, st.st_dev, st.st_ino, now_iso())).fetchall()[0][0]
        else:
            file_id = cursor[0]
        data = _read_lines(fh, offset, chunk_bytes)
        ctx = transcript.FileContext.for_path(path)
        ctx.warmup = None if warmup is None else bool(warmup)
        ctx.last_uuid = cursor[6] if same_file and offset else None
        # what is kept out stays out, whatever becomes of the file (re-read, replaced by a restore)
        parent = parent_transcript(path, data) if ctx.agent_id else None
        ctx.kept_turns = kept_turns(conn, parent) if parent is not None else None
        ctx.capture = cursor[7] if cursor is not None else _inherited_capture(conn, parent, ctx.kept_turns)
        ctx.exclude = stats.exclude
        result = transcript.parse_lines(data, ctx)
        if result.turns:
            _note_turns(conn, path, result.turns)
        if ctx.agent_id and ctx.fallback_session_id and result.records:
            _subagent_title(path, ctx, result)
        stats.bytes += result.consumed
        _count_skips(conn, stats, result.skipped)
        _store(conn, result, file_id, stats, machine)
        end = offset + result.consumed
        conn.execute("UPDATE transcripts SET device = ?, inode = ?, offset = ?, warmup = ?, tail = ?, last_uuid = ?, "
                     "capture = ?, updated_at = ? WHERE id = ?",
                     (st.st_dev, st.st_ino, end, None if ctx.warmup is None else int(ctx.warmup),
                      _tail(fh, end, ctx.capture is not None),
                      ctx.last_uuid, ctx.capture, now_iso(), file_id))
        stats.commits += 1
        if stats.before_commit is not None:
            stats.before_commit(conn, stats)
        return result.consumed == 0 or offset + result.consumed >= st.st_size


def _inherited_capture(conn, parent, turns):
    """A subagent's transcript, read for the first time, is kept out whole when its session's lines
    are being kept out: an excluded project; a #chats-off session, a #chats-skip turn when the
    session's ``kept_turns`` do not say which of its runs are (a journal older than them)."""
    if parent is None:
        return None
    rows = conn.execute("SELECT capture FROM transcripts WHERE path = ?", (parent,)).fetchall()
    state = rows[0][0] if rows else None
    return "project" if state == "project" or (state is not None and not turns) else None


def parent_transcript(path, data=b""):
    """The session transcript of a subagent's: ``<dir>/<session>.jsonl`` of 2.1+'s
    ``<dir>/<session>/subagents/agent-<id>.jsonl``; of an older ``<dir>/agent-<id>.jsonl`` beside the
    sessions, the ``sessionId`` its lines (``data``) name; None when there is none."""
    folder = os.path.dirname(path)
    if os.path.basename(folder) == "subagents":
        return os.path.dirname(folder) + ".jsonl"
    at = data.find(b'"sessionId":')
    if at < 0:
        return None
    start = data.find(b'"', at + 12)
    end = data.find(b'"', start + 1) if 0 <= start < at + 64 else -1
    session = data[start + 1:end].decode("utf-8", "replace") if 0 < end - start <= 200 else ""
    if not session.strip(".") or any(c in session for c in '/\\\x00\n'):
        return None
    return os.path.join(folder, session + ".jsonl")


KEPT_TURNS = "kept_turns:"   # journal state, + a session transcript's path: its turns kept out (JSON)
MAX_KEPT_TURNS = 200          # past it, the oldest two are kept as one (what was between them too)


def kept_turns(conn, path):
    """``[[start, end], ...]``: the timestamps of the turns of the session transcript at ``path``
    kept out by a marker (``end`` None: still kept out), for its subagents' lines."""
    value = get_state(conn, KEPT_TURNS + path)
    return jsonl.loads(value) if value else []


def _note_turns(conn, path, events):
    """Add the parser's ``ParseResult.turns`` to the ``kept_turns`` of ``path``."""
    spans = kept_turns(conn, path)
    for event, stamp in events:
        if event == "open" and spans and spans[-1][1] is None:   # the marked prompt of a turn the hook
            if stamp is not None and spans[-1][0] is not None:   # began keeping out: whichever is first
                spans[-1][0] = min(spans[-1][0], stamp)
        elif event == "open":
            spans.append([stamp, None])
        elif event == "close" and spans and spans[-1][1] is None and stamp is not None:
            spans[-1][1] = stamp
    while len(spans) > MAX_KEPT_TURNS:
        spans[0:2] = [[spans[0][0], spans[1][1]]]
    set_state(conn, KEPT_TURNS + path, jsonl.dumps(spans))


def capture_of(conn, path):
    """The file's capture state (None: its lines are recorded; see ``transcript.FileContext``)."""
    rows = conn.execute("SELECT capture FROM transcripts WHERE path = ?", (os.path.abspath(path),)).fetchall()
    return rows[0][0] if rows else None


def keep_out(conn, path, state):
    """Keep the lines of ``path`` out from now on (``"skip"``: the turn a prompt starts, ``"off"``: the
    rest): what the hook does at UserPromptSubmit when the prompt has a marker, before Claude Code
    writes the prompt line. A state only grows (nothing -> skip -> off; a kept-out project stays)."""
    path = os.path.abspath(path)
    with Immediate(conn):
        conn.execute("INSERT INTO transcripts (path, offset, updated_at) VALUES (?, 0, ?) ON CONFLICT (path) DO NOTHING",
                     (path, now_iso()))
        conn.execute("UPDATE transcripts SET capture = ? WHERE path = ? AND (capture IS NULL OR "
                     "(capture = 'skip' AND ? = 'off'))", (state, path, state))
        _note_turns(conn, path, [("open", now_iso())])   # its subagents' lines from now on too


def _subagent_title(path, ctx, result):
    """The subagent's name from ``agent-<id>.meta.json`` beside its transcript (2.1+: description, type)."""
    try:
        with open(path[:-len(".jsonl")] + ".meta.json", "rb") as fh:
            meta = jsonl.loads(fh.read(1 << 16))
    except (OSError, ValueError):
        return
    if not isinstance(meta, dict):
        return
    description, kind = meta.get("description"), meta.get("agentType")
    name = " ".join(str(v).strip() for v in (description,) if isinstance(v, str) and v.strip())
    if isinstance(kind, str) and kind.strip() and kind.strip() not in name:
        name = f"{name} ({kind.strip()})" if name else kind.strip()
    session = transcript.subagent_session_id(ctx.fallback_session_id, ctx.agent_id)
    if name and transcript.conversation_problem(session) is None:
        result.titles.append(transcript.Title("agent_name", session, name[:500]))


def _read_lines(fh, offset, chunk_bytes):
    """Bytes from ``offset`` holding at least one complete line when there is one."""
    fh.seek(offset)
    data = tail = fh.read(chunk_bytes)
    while tail and b"\n" not in tail:  # a line longer than one chunk: read on to its end
        tail = fh.read(chunk_bytes)
        data += tail
    return data


def _store(conn, result, file_id, stats, machine):
    records = _new_records(conn, result.records, stats)
    if records or result.raw:
        records = _not_purged(conn, result, records, stats)
    clean = stats.redactor() if records or result.titles or result.raw else None
    if records:
        records = _claim_final_answers(conn, records, clean, file_id, stats)
    if records:
        sessions = _upsert_sessions(conn, records, machine, stats.machine_made)
        stats.sessions.update(sessions)
        numbers = {sid: session_number(conn, sid) for sid in sessions}
        _insert_messages(conn, [(uuids.pack(key), numbers[r.session_id], seq, r.role, r.kind,
                                 clean(r.text) if clean else r.text, stamps.pack(r.timestamp), r.message_id,
                                 int(r.is_sidechain), file_id, int(copy))
                                for r, seq, key, copy in records])
        stats.messages += len(records)
    if result.titles:
        _apply_titles(conn, result.titles, file_id, machine, clean)
    if result.raw:
        _keep_lines(conn, result.raw, clean, stats.pack)
    _resolve_summaries(conn, file_id)


# What the full-text index's insert trigger does for one message (``ftsparts.write_triggers``: into the head),
# for every message above an id. (Written here: ``ftsparts`` is off the hook's path.)
_INDEX_ABOVE = f"INSERT INTO messages_fts(rowid, content) SELECT id, {texts.text_sql()} FROM messages WHERE id > ?"


def _insert_messages(conn, rows):
    """Insert ``rows`` into messages, then index them in the full-text index in one statement.

    Left to the index's trigger, each message is its own statement, and FTS5 writes what it holds to the
    index as a new segment at the savepoint every statement opens: a segment a message, merged again and
    again (``chats import`` of 100k messages spent 29 % of its time there; 24.0 -> 19.3 s). The trigger
    leaves the messages alone while ``texts.indexing_later`` says so on this connection (journal
    migration 0011); every other insert (a final answer, a row typed by hand) is indexed by it."""
    after = conn.execute("SELECT max(id) FROM messages").fetchall()[0][0] or 0   # (new ids are above it)
    with texts.indexing_later(conn):
        conn.executemany("INSERT INTO messages (uuid, session, seq, role, kind, content, created_at, message_id, "
                         "is_sidechain, file_id, copy) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.execute(_INDEX_ABOVE, (after,))


PURGED = "purged"   # the skip reason of a line a tombstone of the journal covers


def _not_purged(conn, result, records, stats):
    """``records`` less those a tombstone in force covers (``chats purge`` here, or a tombstone from
    Postgres the sync applied: migration 0005), and likewise ``result.raw`` and ``result.titles``:
    a purged session does not come back when its file is read again (a new inode, ``chats import``).
    A tombstone covers what was written up to its ``before``: a turn recorded later is kept.
    One indexed lookup: the sessions' ids and their folders with the folders above them."""
    folders = {r.session_id: r.cwd for r, *_ in records if r.cwd}
    names = {r.session_id for r, *_ in records} | {r.parent_session_id for r, *_ in records if r.parent_session_id}
    names |= {line[0] for line in result.raw}
    above = set()
    for cwd in set(folders.values()):   # /a/b: /a/b, /a and /
        while cwd not in above:
            above.add(cwd)
            cwd = cwd.rpartition("/")[0] or "/"
    names = (names | above) - {None}
    if not names:
        return records
    names = list(names)
    found = []
    for start in range(0, len(names), 500):
        part = names[start:start + 500]
        found += conn.execute(f"SELECT kind, target, before FROM tombstones WHERE state = 'applied' AND target IN "
                              f"({','.join('?' * len(part))})", part).fetchall()
    if not found:
        return records

    def purged(session, when):
        top = session.partition(":agent-")[0]
        cwd = folders.get(session)
        for kind, target, before in found:
            prefix = target if target.endswith("/") else target + "/"
            if (target in (session, top) if kind == "session" else
                    cwd is not None and (cwd == target or cwd.startswith(prefix))) and \
                    (not when or conn.execute("SELECT coalesce(julianday(?) <= julianday(?), 1)",
                                              (when, before)).fetchall()[0][0]):
                return True
        return False

    kept = [item for item in records if not purged(item[0].session_id, item[0].timestamp)]
    raw = [line for line in result.raw if not purged(line[0], line[4])]
    dropped = len(records) - len(kept)
    alive = {item[0].session_id for item in kept}
    result.titles = [t for t in result.titles if t.session_id in alive or not purged(t.session_id, None) or
                     conn.execute("SELECT 1 FROM sessions WHERE id = ?", (t.session_id,)).fetchall()]
    if dropped:
        _count_skips(conn, stats, {PURGED: dropped})
    result.raw[:] = raw
    return kept


def _count_skips(conn, stats, skipped):
    """Lines skipped, by reason: in this run's stats and the journal's running counts."""
    stats.add_skips(skipped)
    if skipped:
        conn.executemany("INSERT INTO skipped_lines (reason, count) VALUES (?, ?) ON CONFLICT (reason) "
                         "DO UPDATE SET count = count + excluded.count", list(skipped.items()))


_KEEP_LINE = """
INSERT OR IGNORE INTO raw_lines (session, seq, key, parent, line, packed, created_at)
VALUES (?, (SELECT coalesce(max(seq), -1) + 1 FROM raw_lines WHERE session = ?), ?, ?, ?, ?, ?)
"""


def session_number(conn, session_id):
    """The number the messages and kept lines of ``session_id`` name it by (``session_numbers``, journal
    migrations 0012 and 0015), made when it has none."""
    rows = conn.execute("SELECT number FROM session_numbers WHERE session_id = ?", (session_id,)).fetchall()
    if rows:
        return rows[0][0]
    conn.execute("INSERT INTO session_numbers (session_id) VALUES (?)", (session_id,))
    return conn.last_insert_rowid()


def _keep_lines(conn, lines, clean, pack=None):
    """The lines ``chats restore`` writes back, as read (``chats sync`` compresses them: see
    ``rawlines``) or compressed by ``pack``, redacted inside their JSON strings when ``clean`` is given
    (the journal_redact setting); links as they are. A line stored already is ignored (its session and
    key are its identity)."""
    rows, numbers = [], {}
    for session, key, parent, raw, stamp in lines:
        number = numbers.get(session)
        if number is None:
            number = numbers[session] = session_number(conn, session)
        if raw is not None and clean:
            raw = rawlines.redact_line(raw, clean)
        if raw is not None and pack is not None:
            rows.append((number, number, uuids.pack(key), parent, *pack(conn, session, key, stamp, raw),
                         stamps.pack(stamp)))
        else:
            rows.append((number, number, uuids.pack(key), parent, raw, int(raw is None), stamps.pack(stamp)))
    conn.executemany(_KEEP_LINE, rows)


def copy_key(uuid, session_id):
    """How a line already stored by another session is stored in ``session_id`` (a fork's copy)."""
    return f"{uuid}@{session_id}"


def _new_records(conn, records, stats):
    """``[record, seq (None), key, copy]`` of the records not stored yet, in order.

    A record is new when its session does not hold its line yet: the bare uuid
    stored for that session, or its ``copy_key`` (the line first stored by another
    session: a fork's copy, stored again under the key, ``copy`` true).
    """
    if not records:
        return []
    wanted = {r.uuid for r in records} | {copy_key(r.uuid, r.session_id) for r in records}
    owner = {}   # stored key -> session
    keys = list(wanted)
    for start in range(0, len(keys), 500):
        batch = [uuids.pack(key) for key in keys[start:start + 500]]
        marks = ",".join("?" * len(batch))
        owner.update((uuids.unpack(uuid), session) for uuid, session in conn.execute(
            f"SELECT m.uuid, n.session_id FROM messages m JOIN session_numbers n ON n.number = m.session "
            f"WHERE m.uuid IN ({marks})", batch))
    fresh = []
    for record in records:
        keyed = copy_key(record.uuid, record.session_id)
        first = owner.get(record.uuid)
        if first == record.session_id or keyed in owner:
            stats.duplicates += 1
            continue
        key, copy = (record.uuid, False) if first is None else (keyed, True)
        owner[key] = record.session_id
        fresh.append([record, None, key, copy])
    return fresh


# -- a turn's final answer, from the Stop payload ------------------------------------------


def record_final_answer(conn, session_id, text, stats, project_path=None, machine=None, transcript_path=None):
    """Store a turn's final answer from the Stop hook's ``last_assistant_message`` when the
    transcript does not hold it yet; True when it was stored.

    Claude Code often runs Stop before it writes the turn's last assistant line. The answer
    is then stored now, as the session's next message, and listed in ``final_answers``; when
    the line arrives (``_claim_final_answers``) the message takes the line's uuid, so the line
    is not stored twice and a re-read of the file finds it stored. Nothing is stored when the
    session's last assistant text already is this answer (the line was there in time), nor when the
    lines of ``transcript_path`` are being kept out (``capture_of``).
    """
    text = transcript.clean_text(text) if isinstance(text, str) else ""
    if not text or (transcript_path and capture_of(conn, transcript_path) is not None):
        return False
    refused = transcript.conversation_problem(session_id)
    if refused:   # not an id Claude Code writes: never a session row (restore makes file names of them)
        stats.add_skips({f"refused {refused}": 1})
        return False
    clean = stats.redactor()
    content = clean(text) if clean else text
    if _last_answer(conn, session_id) == content:   # the common case, read without taking the write lock
        return False
    with Immediate(conn):
        if _last_answer(conn, session_id) == content:
            return False
        stamp = now_iso()
        rows = conn.execute("SELECT next_seq FROM sessions WHERE id = ?", (session_id,)).fetchall()
        if not rows:   # a subagent's answer before its lines: the row knows its parent, as its lines would say
            parent, _, agent = session_id.partition(":agent-")
            parent, agent = (parent, agent) if parent and agent else (None, None)
            conn.execute("INSERT INTO sessions (id, parent_session_id, agent_id, project_path, machine, first_at, "
                         "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (session_id, parent, agent, project_path, machine or machine_name(), stamp, stamp))
        seq = rows[0][0] if rows else 0
        conn.execute("INSERT INTO messages (uuid, session, seq, role, kind, content, created_at) "
                     "VALUES (?, ?, ?, 'assistant', ?, ?, ?)",
                     (f"stop:{session_id}:{seq}", session_number(conn, session_id), seq, transcript.TEXT, content,
                      stamps.pack(stamp)))
        conn.execute("INSERT INTO final_answers (message_id) VALUES (?)", (conn.last_insert_rowid(),))
        conn.execute("UPDATE sessions SET next_seq = ?, last_at = max(coalesce(last_at, ''), ?), updated_at = ? "
                     "WHERE id = ?", (seq + 1, stamp, stamp, session_id))
        stats.messages += 1
        stats.commits += 1
        if stats.before_commit is not None:
            stats.before_commit(conn, stats)
    return True


def _last_answer(conn, session_id):
    rows = conn.execute(f"SELECT chats_text(content) FROM messages WHERE session = {NUMBER} AND role = 'assistant' "
                        "AND kind = 'text' "
                        "ORDER BY seq DESC LIMIT 1", (session_id,)).fetchall()
    return rows[0][0] if rows else None


def _claim_final_answers(conn, records, clean, file_id, stats):
    """The new records, less the final answers stored from a Stop payload whose line this is:
    those messages take the line's uuid, API message id and file (``record_final_answer``)."""
    sessions = {r.session_id for r, *_ in records if r.role == "assistant" and r.kind == transcript.TEXT}
    if not sessions:
        return records
    marks = ",".join("?" * len(sessions))
    # CROSS JOIN: from the answers waiting (almost always none), not from the session's messages (left to
    # itself the planner walked every message of the session: 1.5 ms a turn at 20,000 messages)
    waiting = {(session, content): message for message, session, content in conn.execute(
        f"SELECT f.message_id, n.session_id, chats_text(m.content) FROM final_answers f CROSS JOIN messages m "
        f"ON m.id = f.message_id CROSS JOIN session_numbers n ON n.number = m.session WHERE n.session_id IN ({marks})",
        list(sessions))}
    if not waiting:
        return records
    kept = []
    for item in records:
        record, _seq, key, _copy = item
        message = waiting.pop((record.session_id, clean(record.text) if clean else record.text), None) \
            if record.role == "assistant" and record.kind == transcript.TEXT else None
        if message is None:
            kept.append(item)
            continue
        conn.execute("UPDATE messages SET uuid = ?, message_id = ?, file_id = ? WHERE id = ?",
                     (uuids.pack(key), record.message_id, file_id, message))
        conn.execute("DELETE FROM final_answers WHERE message_id = ?", (message,))
        stats.duplicates += 1
    return kept


_UPSERT_SESSION = """
INSERT INTO sessions (id, parent_session_id, agent_id, project_path, git_branch, slug, first_at, last_at,
                      machine, next_seq, updated_at, entrypoint, machine_made)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET
    agent_id = coalesce(sessions.agent_id, excluded.agent_id),
    git_branch = coalesce(excluded.git_branch, sessions.git_branch),
    slug = coalesce(sessions.slug, excluded.slug),
    first_at = coalesce(min(sessions.first_at, excluded.first_at), sessions.first_at, excluded.first_at),
    last_at = coalesce(max(sessions.last_at, excluded.last_at), sessions.last_at, excluded.last_at),
    machine = coalesce(sessions.machine, excluded.machine),
    next_seq = excluded.next_seq,
    updated_at = excluded.updated_at,
    entrypoint = coalesce(sessions.entrypoint, excluded.entrypoint),
    machine_made = CASE WHEN ? THEN 1 WHEN sessions.entrypoint IS NOT NULL THEN sessions.machine_made
                        ELSE excluded.machine_made END
"""   # machine-made: by the session's first entrypoint (once known), or by the hook's CLAUDE_CHATS_MACHINE_MADE
# The indexed columns a session keeps once known (its parent, its project) are set apart, only while still
# unknown: an UPDATE that assigns an indexed column rewrites its index entry even to the same value, and
# every hook turn upserts its session (two 16 KB pages less in the WAL of a turn).
_FILL_SESSION = """
UPDATE sessions SET parent_session_id = coalesce(parent_session_id, ?1), project_path = coalesce(project_path, ?2)
WHERE id = ?3 AND ((parent_session_id IS NULL AND ?1 IS NOT NULL) OR (project_path IS NULL AND ?2 IS NOT NULL))
"""


def _upsert_sessions(conn, records, machine, forced=False):
    """Give each new record its sequence number and bring its session row up to date."""
    info = {}
    for pair in records:
        r = pair[0]
        s = info.get(r.session_id)
        if s is None:
            rows = conn.execute("SELECT next_seq FROM sessions WHERE id = ?", (r.session_id,)).fetchall()
            s = info[r.session_id] = {"next": rows[0][0] if rows else 0, "first": None, "last": None,
                                      "cwd": None, "branch": None, "slug": None, "entry": None, "rec": r}
        pair[1] = s["next"]
        s["next"] += 1
        if r.timestamp:
            s["first"] = r.timestamp if s["first"] is None else min(s["first"], r.timestamp)
            s["last"] = r.timestamp if s["last"] is None else max(s["last"], r.timestamp)
        s["cwd"] = s["cwd"] or r.cwd
        s["branch"] = r.git_branch or s["branch"]
        s["slug"] = s["slug"] or r.slug
        s["entry"] = s["entry"] or r.entrypoint
    stamp = now_iso()
    for s in info.values():   # a subagent is what its parent session is, whatever its own lines say
        parent = s["rec"].parent_session_id
        s["inherits"] = bool(parent) and bool(conn.execute(
            "SELECT 1 FROM sessions WHERE id = ? AND machine_made = 1", (parent,)).fetchall())
    conn.executemany(_UPSERT_SESSION, [
        (sid, s["rec"].parent_session_id, s["rec"].agent_id, s["cwd"], s["branch"], s["slug"], s["first"],
         s["last"], machine, s["next"], stamp, s["entry"],
         int(forced or s["inherits"] or transcript.machine_made(s["entry"])), int(forced or s["inherits"]))
        for sid, s in info.items()])
    conn.executemany(_FILL_SESSION, [(s["rec"].parent_session_id, s["cwd"], sid) for sid, s in info.items()])
    made = [sid for sid, s in info.items() if forced or transcript.machine_made(s["entry"])]
    if made:   # subagents stored before their parent session said what it is
        conn.executemany("UPDATE sessions SET machine_made = 1, updated_at = ? WHERE machine_made = 0 AND "
                         "parent_session_id IN (SELECT id FROM sessions WHERE id = ? AND machine_made = 1)",
                         [(stamp, sid) for sid in made])
    return info.keys()


_TITLE_COLUMNS = {"custom": "name", "agent_name": "agent_name", "ai": "ai_title"}


def _apply_titles(conn, titles, file_id, machine, clean=None):
    stamp = now_iso()
    for title in titles:
        value = clean(title.value) if clean else title.value
        if title.source == "summary":
            conn.execute("INSERT OR REPLACE INTO pending_summaries (file_id, leaf_uuid, summary) VALUES (?, ?, ?)",
                         (file_id, title.leaf_uuid, value))
            continue
        column = _TITLE_COLUMNS[title.source]
        conn.execute("INSERT INTO sessions (id, machine, updated_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
                     (title.session_id, machine, stamp))
        conn.execute(f"UPDATE sessions SET {column} = ?, updated_at = ? WHERE id = ? AND {column} IS NOT ?",
                     (value, stamp, title.session_id, value))


def _resolve_summaries(conn, file_id):
    """A summary names a session only once its leaf message is read from the same file (FORMAT.md 2.5)."""
    pending = conn.execute("SELECT leaf_uuid, summary FROM pending_summaries WHERE file_id = ?", (file_id,)).fetchall()
    for leaf, summary in pending:
        # the leaf, or a fork's copy of it (``<leaf>@<session>``: from "@" to "A"), by the uuid's index
        rows = conn.execute("SELECT n.session_id FROM messages m JOIN session_numbers n ON n.number = m.session "
                            "WHERE (m.uuid = ? OR (m.uuid >= ? AND m.uuid < ? AND m.copy = 1)) AND m.file_id = ?",
                            (uuids.pack(leaf), uuids.pack(leaf + "@"), uuids.pack(leaf + "A"), file_id)).fetchall()
        if rows:
            conn.execute("UPDATE sessions SET summary = ?, updated_at = ? WHERE id = ? AND summary IS NOT ?",
                         (summary, now_iso(), rows[0][0], summary))
            conn.execute("DELETE FROM pending_summaries WHERE file_id = ? AND leaf_uuid = ?", (file_id, leaf))


def subagent_files(transcript_path):
    """Subagent transcripts of the session at ``transcript_path``, in both layouts.

    2.1+: ``<dir>/<session>/subagents/agent-*.jsonl``. Up to 2.0:
    ``<dir>/agent-*.jsonl`` beside the sessions (any session's; the parser
    links each line to its own parent ``sessionId``).
    """
    folder, name = os.path.split(os.path.abspath(transcript_path))
    session = name[:-6] if name.endswith(".jsonl") else name
    found = []
    for where in (os.path.join(folder, session, "subagents"), folder):
        try:
            with os.scandir(where) as entries:
                found.extend(e.path for e in entries
                             if e.name.startswith("agent-") and e.name.endswith(".jsonl") and e.is_file())
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
    return sorted(found)


WATCH_DAYS = 2


def watch(conn, path, session_id):
    """Have every later hook run read ``path`` too (a session no hook of its own will name)."""
    conn.execute("INSERT OR IGNORE INTO watched_transcripts (path, session_id, added_at) VALUES (?, ?, ?)",
                 (os.path.abspath(path), session_id, now_iso()))


def ingest_watched(conn, stats, skip=None, now=None):
    """Read what is new in the watched transcripts; forget those unchanged for ``WATCH_DAYS``, and
    those still missing ``WATCH_DAYS`` after they were watched (``/fork``'s SessionStart comes before
    its transcript is written: a hook run in between must not forget it)."""
    now = now or time.time()
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now - WATCH_DAYS * 86400))
    rows = conn.execute("SELECT path, added_at FROM watched_transcripts").fetchall()
    for path, added in rows:
        if path == skip:
            continue
        try:
            stale = now - os.stat(path).st_mtime > WATCH_DAYS * 86400
        except OSError:
            stale = (added or "") < cutoff
        if stale:
            conn.execute("DELETE FROM watched_transcripts WHERE path = ?", (path,))
        else:
            ingest_file(conn, path, stats)
    return stats


def ingest_session(conn, transcript_path, stats=None, machine=None):
    """The hook's unit of work: the session transcript and its subagents' files."""
    stats = stats if stats is not None else IngestStats()
    ingest_file(conn, transcript_path, stats, machine)
    for path in subagent_files(transcript_path):
        ingest_file(conn, path, stats, machine)
    return stats
