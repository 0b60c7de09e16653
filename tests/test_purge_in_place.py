"""Issue 22: ``chats purge`` erases in place, without rewriting the whole journal, and leaves no byte.

Every writing connection runs with ``PRAGMA secure_delete`` and the FTS index with FTS5's
``secure-delete`` option (migration 0007), so a purge deletes in place: a session that is a small
share of the journal through FTS5's secure-delete, a large share with plain deletes and one merge of
the index (``optimize``). Either way the journal is not vacuumed (its free pages stay, for the next
writes), and no mark of the purged session is left in journal.db, its WAL or shared memory: its text,
its FTS entries, its kept lines (compressed by ``chats import``), its sqlite-vec vectors, the 64
bytes of its transcript's tail kept with the cursor. A journal written before migration 0007 is rewritten once, by its first
purge. Everything through ``chats`` as a process.
"""

import json
import pathlib
import struct
import subprocess
import uuid as uuidlib

import apsw
import pytest

from claude_chats import paths
from claude_chats.localstore import db, stamps, uuids, vectors
from tests.support.hooks import CHATS
from tests.support.journals import OLD_KEPT_LINES
from tests.support.on_disk import holding


def chats(*args):
    proc = subprocess.run(CHATS + list(args), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def mark(session, i):
    return f"Quillmark{session}x{i}q"


def line(session, i, parent):
    kind = "user" if i % 2 == 0 else "assistant"
    pad = " ".join(f"w{session}y{i}z{k}" for k in range(400))   # ~5 KB: each message frees whole pages
    text = f"message {i} of session {session} about the build {pad} and the {mark(session, i)}"   # last: the
    #   transcript's tail kept with its cursor holds it
    message = {"role": "user", "content": text} if kind == "user" else {
        "id": f"msg_{session}_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}]}
    uid = str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, f"{session}/{i}"))
    return uid, {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/work/inplace",
                 "sessionId": f"sess-{session}", "version": "2.1.0", "gitBranch": "main", "type": kind,
                 "uuid": uid, "timestamp": f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                 "message": message}


def record(sessions, per, rounds=2):
    """``sessions`` sessions of ``per`` messages, written in ``rounds`` (each imported before the next
    is appended: the sessions' rows interleave in the file, as sessions running side by side do)."""
    folder = pathlib.Path(paths.claude_projects_dir()) / "-work-inplace"
    folder.mkdir(parents=True, exist_ok=True)
    parents = [None] * sessions
    for r in range(rounds):
        for s in range(sessions):
            with open(folder / f"sess-{s}.jsonl", "a") as fh:
                for i in range(r * per // rounds, (r + 1) * per // rounds):
                    parents[s], obj = line(s, i, parents[s])
                    fh.write(json.dumps(obj) + "\n")
        chats("import")


def vector(session, i):
    return struct.pack("4f", 1000.0 + session, 0.5 + i, 7.25, -3.125)


def add_vectors():
    """One sqlite-vec vector a message, each its own bytes, as sync keeps them locally."""
    conn = db.connect(paths.journal_path())   # (the journal's triggers call its functions)
    vectors.load_extension(conn)
    conn.execute("INSERT INTO spaces (key, provider, model, dimensions, created_at) "
                 "VALUES ('test/t/4/{}', 'test', 't', 4, '2026-01-01')")
    conn.execute("CREATE VIRTUAL TABLE vec_1 USING vec0(embedding float[4])")
    for mid, session, seq in conn.execute("SELECT id, substr(session_id, 6), seq FROM messages JOIN session_numbers ON number = session").fetchall():
        conn.execute("INSERT INTO chunks (id, space_id, message_id, chunk_index, start_char, end_char) "
                     "VALUES (?, 1, ?, 0, 0, 10)", (mid, mid))
        conn.execute("INSERT INTO vec_1 (rowid, embedding) VALUES (?, ?)", (mid, vector(int(session), seq)))
    conn.close()


def on_disk(session, per):
    """{file: [what of ``session`` it holds]}: the marks of its text, its vectors (as ``vec i``)."""
    journal = paths.journal_path()
    marks = {m.encode(): m for i in range(per) for m in (mark(session, i), mark(session, i).lower())}
    marks.update({vector(session, i): f"vec {i}" for i in range(per)})
    return holding([journal, journal + "-wal", journal + "-shm"], marks)


def journal_facts():
    """(the file's slack: bytes of free pages and unused bytes within pages, the FTS config, the state). A purge
    in place adds slack (what it deleted leaves room); a whole-file VACUUM packs the pages, so it removes slack."""
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        free = conn.execute("SELECT sum(unused) FROM dbstat").fetchall()[0][0] + \
            conn.execute("PRAGMA freelist_count").fetchall()[0][0] * conn.execute("PRAGMA page_size").fetchall()[0][0]
        config = dict(conn.execute("SELECT k, v FROM messages_fts_config").fetchall())
        state = dict(conn.execute("SELECT key, value FROM state").fetchall())
        return free, config, state
    finally:
        conn.close()


@pytest.mark.parametrize("sessions, per, path", [(460, 2, "secure-delete"), (6, 40, "merge")])
def test_a_purge_erases_in_place_and_leaves_no_byte_of_the_session(sessions, per, path):
    """460 sessions of 2: one is less than 1/450 of the journal (FTS5's secure-delete); 6 of 40: one is
    a sixth (plain deletes, then one merge). FTS5 writes its format version 5 once a secure delete ran."""
    record(sessions, per)
    add_vectors()
    victim, kept = sessions // 2, sessions // 2 + 1
    assert len(on_disk(victim, per)[paths.journal_path()]) > per, "nothing to find: the test proves nothing"
    slack = journal_facts()[0]
    report = json.loads(chats("purge", "--session", f"sess-{victim}", "--yes", "--json"))
    assert report["local"]["messages"] == per and report["scrubbed"], report
    assert on_disk(victim, per) == {}
    free, config, state = journal_facts()
    assert "erased_in_place" in state, state   # a new journal: clean from its first migration
    assert free > slack, "the journal was vacuumed whole (its pages packed)"
    assert config.get("secure-delete") == 1 and "fts_merge_pending" not in state, (config, state)
    assert config.get("version") == (5 if path == "secure-delete" else 4), config
    hits = json.loads(chats("search", "--json", "--mode", "fulltext", mark(kept, per - 1)))["hits"]
    assert hits and mark(kept, per - 1) in json.dumps(hits)
    assert json.loads(chats("search", "--json", "--mode", "fulltext", mark(victim, per - 1)))["hits"] == []
    assert len(on_disk(kept, per)[paths.journal_path()]) > per   # its text and its vectors stay
    assert json.loads(chats("restore", f"sess-{kept}", "--dry-run", "--json"))


def test_a_journal_from_before_migration_0007_is_rewritten_once_then_erased_in_place():
    record(8, 10)
    journal = paths.journal_path()
    conn = apsw.Connection(journal)   # back to what version 6 of the schema left: no option, no state
    uuids.register(conn)              # (its uuids as TEXT, as every version before 0013 wrote them)
    stamps.register(conn)             # (and its times, as every version before 0015 wrote them)
    db._run_script(conn, OLD_KEPT_LINES)      # (nor the kept lines' session numbers of migration 0012)
    conn.execute("INSERT INTO messages_fts(messages_fts, rank) VALUES ('secure-delete', 0); "
                 "DELETE FROM state WHERE key = 'erased_in_place'; "
                 "DELETE FROM migrations WHERE name >= '0007'; PRAGMA user_version = 6")
    conn.close()
    chats("import")   # a command that writes migrates the journal
    before, config, state = journal_facts()
    assert config.get("secure-delete") == 1 and "erased_in_place" not in state, (config, state)
    chats("purge", "--session", "sess-1", "--yes")
    free, config, state = journal_facts()
    assert free < before and "erased_in_place" in state, (before, free, state)   # rewritten whole, once
    chats("purge", "--session", "sess-2", "--yes")
    assert journal_facts()[0] > free   # then in place
    assert on_disk(1, 10) == {} and on_disk(2, 10) == {}
    assert on_disk(3, 10)
