"""Fuzzing the journal writer in-process, on a real SQLite file.

Fuzzed transcripts are appended piece by piece (torn lines included) and
ingested after each piece, as the hook does turn by turn. After every step the
journal must be consistent (``PRAGMA integrity_check``, the FTS5 index agrees
with the messages, sequence numbers contiguous per session) and nothing stored
before may have changed or vanished. Hostile project paths and file names are
stored verbatim, as data, and create no file anywhere; a session or agent id that
is not one Claude Code writes (``chats restore`` makes file names of them, issue 21)
is refused, the line counted as skipped.

The checks, ``check_journal`` and ``tree``, are in tests/support/fuzzing.py: the
hook, fault and CLI tests use them too.
"""

import os
import tempfile

import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from claude_chats import transcript
from claude_chats.localstore import writer
from claude_chats.localstore.journal import Journal
from tests.support import lines
from tests.support.fuzzing import (
    FILE_NAMES,
    HOSTILE_IDS,
    HOSTILE_PATHS,
    check_journal,
    fuzz_settings,
    lines_of,
    mutated_line,
    transcript_bytes,
    tree,
)
from tests.support.journals import fulltext


def _file(root, name):
    path = os.path.join(root, "projects", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


@seed(201)
@fuzz_settings(25, 1_500)
@given(st.lists(st.tuples(st.sampled_from(FILE_NAMES[:4]), transcript_bytes), min_size=1, max_size=6))
def test_piecewise_ingest_keeps_the_journal_consistent_and_loses_nothing(steps):
    with tempfile.TemporaryDirectory() as root:
        db = os.path.join(root, "journal.db")
        rows = {}
        with Journal.open(db) as journal:
            for name, data in steps:
                path = _file(root, name)
                with open(path, "ab") as fh:
                    fh.write(data)
                writer.ingest_file(journal.conn, path)
                rows = check_journal(db, rows)
            writer.ingest_file(journal.conn, path)        # nothing new: nothing changes
            assert check_journal(db, rows) == rows
        # The same files imported at once, into a fresh journal: the same messages.
        fresh = os.path.join(root, "fresh.db")
        with Journal.open(fresh) as journal:
            journal.import_files(sorted({_file(root, n) for n, _ in steps}))
        assert lines_of(check_journal(fresh)) == lines_of(rows)


@seed(202)
@fuzz_settings(25, 800)
@given(st.lists(mutated_line, min_size=1, max_size=8), st.lists(st.integers(0, 400), min_size=1, max_size=5))
def test_torn_writes_at_any_byte_store_each_line_once(encoded, cuts):
    """A writer flushing at arbitrary bytes (the hook runs in between) stores what one read would."""
    data = b"\n".join(encoded) + b"\n"
    with tempfile.TemporaryDirectory() as root:
        path, db = _file(root, "sess-1.jsonl"), os.path.join(root, "journal.db")
        with Journal.open(db) as journal:
            written = 0
            for cut in sorted(c % (len(data) + 1) for c in cuts) + [len(data)]:
                with open(path, "ab") as fh:
                    fh.write(data[written:cut])
                written = max(written, cut)
                writer.ingest_file(journal.conn, path)
            rows = check_journal(db)
        with Journal.open(os.path.join(root, "once.db")) as journal:
            journal.import_files([path])
        assert check_journal(os.path.join(root, "once.db")) == rows


@seed(203)
@fuzz_settings(30, 1_000)
@given(st.sampled_from(HOSTILE_IDS), st.sampled_from(HOSTILE_PATHS), st.sampled_from(FILE_NAMES),
       st.sampled_from(HOSTILE_IDS))
def test_hostile_ids_are_refused_paths_and_file_names_stored_verbatim(session, cwd, name, agent):
    """Paths verbatim, except a lone surrogate, which UTF-8 cannot hold: it becomes U+FFFD. Ids of
    Claude Code's shape verbatim; the lines of other ids are refused and counted (issue 21)."""
    with tempfile.TemporaryDirectory() as root:
        path, db = _file(root, name), os.path.join(root, "home", "journal.db")
        convo = [lines.user("hello there", session=session, cwd=cwd),
                 lines.assistant("general kenobi", session=session, cwd=cwd, isSidechain=True, agentId=agent),
                 {"type": "custom-title", "customTitle": session + " title", "sessionId": session}]
        with open(path, "wb") as fh:
            fh.write(lines.encode(*convo))
        before = tree(root)
        with Journal.open(db) as journal:
            stats = journal.import_files([path])
            assert not stats.errors
            stored = journal.conn.execute("SELECT path FROM transcripts").fetchall()
            assert stored == [(os.path.abspath(path),)]
            sessions = {s["session_id"]: s for s in journal.sessions(limit=100)}
            for s in sessions.values():
                assert s["project_path"] in (cwd, None)
                # A project filter is a folder, never a pattern: only that folder and below.
                for p in {cwd, cwd + "%", cwd + "_", cwd.rstrip("/") + "/"}:
                    if not p:
                        continue
                    got = {x["session_id"] for x in journal.sessions(limit=100, project=p)}
                    base = p.rstrip("/") or "/"
                    want = {k for k, v in sessions.items() if v["project_path"] and (
                        v["project_path"].rstrip("/") == base or v["project_path"].startswith(base.rstrip("/") + "/"))}
                    assert got == want, (p, got, want)
            assert all(transcript.conversation_problem(s) is None for s in sessions), sorted(sessions)
            stored = _storable(session)
            if transcript.id_problem(stored) is not None:
                assert stored not in sessions and stats.skipped.get(
                    f"refused session id: {transcript.id_problem(stored)}", 0) >= 2, stats.skipped
            elif "agent-" not in os.path.basename(name):
                assert stored in sessions, sorted(sessions)
                assert journal.session(stored)["session_id"] == stored
                assert [m["content"] for m in journal.messages(stored)][:1] == ["hello there"]
            if sessions:
                assert fulltext(journal, "kenobi") or fulltext(journal, "hello")
        check_journal(db)
        created = tree(root) - before
        assert all(p == "home" or p.startswith("home" + os.sep) for p in created), created


def _storable(text):
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


SURROGATE_LINES = {   # a JSON escape of a lone surrogate, as JSON.stringify writes one, in each kind of field
    "message text": b'{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":"bad \\ud800"}}',
    "custom title": b'{"type":"custom-title","customTitle":"name \\udc00","sessionId":"s"}',
    "project path": b'{"type":"user","uuid":"u2","sessionId":"s2","cwd":"/w/\\ud83d","message":{"role":"user",'
                    b'"content":"x"}}',
    "session id": b'{"type":"user","uuid":"u2","sessionId":"s\\ud800","message":{"role":"user","content":"x"}}',
}


@pytest.mark.parametrize("glued", [False, True], ids=["own line", "glued to a torn line"])
@pytest.mark.parametrize("where", sorted(SURROGATE_LINES))
def test_a_lone_surrogate_escape_does_not_block_the_file(tmp_path, where, glued):
    """Found by the long fuzz run: the line after a torn one (read back from the glued bytes) kept its
    lone surrogate, and every ingest of the file failed on it from then on."""
    path = tmp_path / "s.jsonl"
    line = (b'{"type":"user","uuid":"torn","mess' if glued else b"") + SURROGATE_LINES[where]
    path.write_bytes(b"\n".join([lines.encode(lines.user("before", session="s", uid="u1")).strip(),
                                 line,
                                 lines.encode(lines.user("after", session="s", uid="u3")).strip()]) + b"\n")
    with Journal.open(str(tmp_path / "journal.db")) as journal:
        journal.import_files([str(path)])
        stored = {row[0] for row in journal.conn.execute("SELECT uuid FROM messages")}
    assert {"u1", "u3"} <= stored
