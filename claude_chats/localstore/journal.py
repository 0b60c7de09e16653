"""The local journal: the library behind ``chats import/search/show/sessions``.

``Journal.open()`` gives a migrated connection to the SQLite file (``conn``,
apsw). Writes go through ``writer`` (shared with the hook); this module reads,
imports in bulk, and hands pending messages to sync.
"""

import os

from .. import paths, rawlines, transcript
from ..errors import SessionNotFound
from ..search.core import NEIGHBOUR_READ, shorten
from . import counts, db, ftsparts, keptlines, writer


class Journal:
    def __init__(self, conn, path):
        self.conn, self.path = conn, path

    @classmethod
    def open(cls, path=None, readonly=False):
        path = path or paths.journal_path()
        return cls(db.connect(path, readonly=readonly), path)

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- writing -----------------------------------------------------------

    def import_files(self, files, on_file=None, redact=None, exclude=None):
        """Ingest each transcript file from its cursor; errors are counted, not raised.
        ``redact``: text -> text applied to what is stored (the ``journal_redact`` setting);
        ``exclude``: a ``capture.ProjectFilter`` (the ``exclude_projects`` setting)."""
        stats = writer.IngestStats(redact=redact, exclude=exclude, pack=keptlines.pack_line)   # not the hook: zlib here
        machine = writer.machine_name()
        for path in files:
            try:
                if not _is_utf8(path):
                    raise UnicodeError("the file name is not valid UTF-8, which the journal stores paths in: "
                                       "rename the file to import it")
                writer.ingest_file(self.conn, path, stats, machine)
            except (OSError, UnicodeError, db.apsw.Error) as exc:
                stats.errors.append(f"{printable(path)}: {type(exc).__name__}: {printable(str(exc))}")
            if on_file:
                on_file(path)
            try:
                ftsparts.seal(self.conn)   # between files: parts of ``PART_ROWS`` as the journal grows
            except db.apsw.Error as exc:
                stats.errors.append(f"sealing a part of the full-text index: {type(exc).__name__}: {exc}")
        return stats

    # -- reading -----------------------------------------------------------

    def _one(self, sql, args=()):
        rows = self.conn.execute(sql, args).fetchall()
        return rows[0] if rows else None

    def counts(self):
        sessions, = self._one("SELECT count(*) FROM sessions")
        messages, pending = counts.messages(self.conn)
        return {"sessions": sessions, "messages": messages, "pending": pending, "synced": messages - pending}

    def skipped_lines(self):
        """{reason: lines} of the transcript lines read and not stored, most first."""
        return dict(self.conn.execute("SELECT reason, count FROM skipped_lines ORDER BY count DESC, reason"))

    def session(self, session_id):
        cur = self.conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,))
        rows = _dicts(cur)
        if not rows:
            raise SessionNotFound(f"no session {session_id!r} in the journal (see `chats sessions`)")
        return rows[0]

    def sessions(self, limit=20, project=None, include_subagents=True, origin="any"):
        """The most recent sessions; ``origin``: "human", "machine" or "any" (``search.core.ORIGINS``)."""
        where, args = _project_filter(project, "s.project_path")
        if not include_subagents:
            where.append("s.agent_id IS NULL")
        if origin in ("human", "machine"):
            where.append(f"s.machine_made = {int(origin == 'machine')}")
        sql = (f"SELECT {_SESSION_COLUMNS} FROM sessions s {_where(where)} "
               "ORDER BY coalesce(s.last_at, s.updated_at) DESC LIMIT ?")
        return _dicts(self.conn.execute(sql, (*args, limit)))

    def subagents(self, session_id):
        """The subagent conversations ``session_id`` started, oldest first."""
        sql = (f"SELECT {_SESSION_COLUMNS} FROM sessions s WHERE s.parent_session_id = ? AND s.agent_id IS NOT NULL "
               "ORDER BY s.first_at, s.id")
        return _dicts(self.conn.execute(sql, (session_id,)))

    def messages(self, session_id, start=None, end=None, kinds=None):
        """Messages of a session by sequence number, ``start``..``end`` inclusive."""
        self.session(session_id)
        where, args = [f"session = {db.NUMBER}"], [session_id]
        if start is not None:
            where.append("seq >= ?")
            args.append(start)
        if end is not None:
            where.append("seq <= ?")
            args.append(end)
        if kinds:
            where.append(f"kind IN ({','.join('?' * len(kinds))})")
            args.extend(kinds)
        sql = f"SELECT {_MESSAGE_COLUMNS} FROM messages {_where(where)} ORDER BY seq"
        return _dicts(self.conn.execute(sql, args))

    def neighbours(self, session_id, seq, span=2):
        rows = self.conn.execute(
            f"SELECT seq, role, kind, substr(chats_text(content), 1, {NEIGHBOUR_READ + 1}) FROM messages "
            f"WHERE session = {db.NUMBER} AND seq BETWEEN ? AND ? AND seq != ? "
            f"AND kind IN ({','.join('?' * len(transcript.CONVERSATION_KINDS))}) ORDER BY seq",
            (session_id, seq - span, seq + span, seq, *transcript.CONVERSATION_KINDS)).fetchall()
        return [{"seq": s, "role": r, "kind": k, "text": shorten(t, NEIGHBOUR_READ)} for s, r, k, t in rows]

    def kept_lines(self, session_id):
        """``{conversation id: [(key, parent, line bytes or None)]}`` of the lines kept for restore of
        ``session_id`` and its subagents, each in order (``rawlines``: None is a link)."""
        rows = self.conn.execute(
            "SELECT n.session_id, chats_uuid(r.key), r.parent, r.line, r.packed, chats_time(r.created_at) "
            "FROM session_numbers n JOIN raw_lines r ON r.session = n.number "
            "WHERE n.session_id = ? "
            "OR n.session_id IN (SELECT id FROM sessions WHERE parent_session_id = ?) "
            "OR substr(n.session_id, 1, ?) = ? ORDER BY n.session_id, r.seq",
            (session_id, session_id, len(session_id) + 7, session_id + ":agent-")).fetchall()
        return rawlines.unpack_rows(rows, read=keptlines.reader(self.conn))

    def in_session_order(self):
        """(id, session_id, role, kind, created_at, content) of every message, session by session."""
        return self.conn.execute("SELECT m.id, n.session_id, m.role, m.kind, chats_time(m.created_at), chats_text(m.content) "
                                 "FROM messages m JOIN session_numbers n ON n.number = m.session "
                                 "ORDER BY n.session_id, m.seq").fetchall()

    # -- sync support --------------------------------------------------------

    def pending(self, limit=500, after_id=0):
        """Messages not yet pushed, oldest first (``id > after_id``); ``fts_size``: FTS5's record of the
        message's length in tokens (see ``outbox.token_count``)."""
        size = ", ".join(f"(SELECT d.sz FROM {name}_docsize d WHERE d.id = messages.id)"
                         for name in ftsparts.tables(self.conn))
        return _dicts(self.conn.execute(
            f"SELECT id, {_MESSAGE_COLUMNS}, (SELECT n.session_id FROM session_numbers n WHERE n.number = messages.session) "
            f"AS session_id, coalesce({size}, NULL) AS fts_size "
            f"FROM messages WHERE synced = 0 AND id > ? ORDER BY id LIMIT ?", (after_id, limit)))

    def mark_synced(self, ids):
        with db.Immediate(self.conn):
            self.conn.executemany("UPDATE messages SET synced = 1 WHERE id = ?", [(i,) for i in ids])

    def state(self, key):
        return db.get_state(self.conn, key)

    def set_state(self, key, value):
        db.set_state(self.conn, key, value)


_SESSION_COLUMNS = f"""s.id AS session_id, {db.session_name()} AS name,
    s.name AS custom_title, s.ai_title, s.summary, s.slug, s.parent_session_id, s.agent_id, s.project_path, s.git_branch,
    s.first_at, s.last_at, s.machine, s.next_seq AS message_count, s.entrypoint, s.machine_made"""
_MESSAGE_COLUMNS = ("chats_uuid(uuid) AS uuid, seq, role, kind, chats_text(content) AS content, chats_time(created_at) AS created_at, message_id, is_sidechain, "
                    "copy")


def _dicts(cursor):
    try:
        names = [d[0] for d in cursor.getdescription()]
    except db.apsw.ExecutionCompleteError:  # the statement returned no row at all
        return []
    return [dict(zip(names, row)) for row in cursor]


def _where(clauses):
    return ("WHERE " + " AND ".join(clauses)) if clauses else ""


def _project_filter(project, column):
    """Exact project path, or any sub-folder of it."""
    if not project:
        return [], []
    project = project.rstrip("/") or "/"
    prefix = project if project.endswith("/") else project + "/"
    return [f"({column} = ? OR substr({column}, 1, ?) = ?)"], [project, len(prefix), prefix]


def _is_utf8(path):
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:   # bytes that are not UTF-8, decoded by the OS layer with surrogateescape
        return False
    return True


def printable(text):
    """``text`` (a path, an error message naming one) as UTF-8 can print it: undecodable bytes as ``\\xff``."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def discover(roots):
    """Every ``.jsonl`` transcript under ``roots`` (files or folders), sorted, subagents' last: a
    session's (what it kept out) is read before theirs, in either layout."""
    found = []
    for root in roots:
        root = os.path.abspath(os.path.expanduser(root))
        if os.path.isfile(root):
            found.append(root)
            continue
        for folder, _dirs, names in os.walk(root):
            found.extend(os.path.join(folder, n) for n in names if n.endswith(".jsonl"))
    return sorted(set(found), key=lambda path: (os.path.basename(path).startswith("agent-"), path))
