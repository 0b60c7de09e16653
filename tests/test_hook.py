"""The hook as Claude Code runs it: a process, JSON on stdin, the real journal file."""

import json
import os
import subprocess
import sys
import threading
import time

import apsw
import pytest

from claude_chats import paths
from claude_chats.localstore import uuids
from tests.support import lines
from tests.support.hooks import HOOK, hook_log, run_hook


def payload(path, session="sess-1", event="Stop"):
    return {"session_id": session, "transcript_path": str(path), "cwd": "/work/proj",
            "hook_event_name": event, "permission_mode": "default"}


def stored(session=None):
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    sql = "SELECT uuid, session_id, seq, content FROM messages JOIN session_numbers ON number = session"
    rows = conn.execute(sql + (" WHERE session_id = ?" if session else "") + " ORDER BY session_id, seq",
                        (session,) if session else ()).fetchall()
    conn.close()
    return [(uuids.unpack(uuid), *rest) for uuid, *rest in rows]   # (stored in 16 bytes: localstore.uuids)


def test_hook_stores_new_lines_incrementally(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    convo = lines.conversation(5)
    path.write_bytes(lines.encode(*convo[:3]))
    run_hook(payload(path))
    assert [r[3] for r in stored()] == [c["message"]["content"] if i % 2 == 0 else
                                        c["message"]["content"][0]["text"] for i, c in enumerate(convo[:3])]
    with open(path, "ab") as fh:
        fh.write(lines.encode(*convo[3:]))
    run_hook(payload(path, event="UserPromptSubmit"))
    rows = stored()
    assert [r[2] for r in rows] == [0, 1, 2, 3, 4]
    assert [r[0] for r in rows] == [c["uuid"] for c in convo]
    run_hook(payload(path))  # nothing new: nothing changes
    assert stored() == rows
    assert hook_log() == []


def test_line_being_written_waits_for_its_newline(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    first, second = lines.conversation(2)
    whole = json.dumps(second).encode()
    path.write_bytes(lines.encode(first) + whole[:40])
    run_hook(payload(path))
    assert len(stored()) == 1
    with open(path, "ab") as fh:
        fh.write(whole[40:] + b"\n")
    run_hook(payload(path))
    assert [r[0] for r in stored()] == [first["uuid"], second["uuid"]]


def test_replaced_or_shrunk_file_is_reread_without_duplicates(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    convo = lines.conversation(6)
    path.write_bytes(lines.encode(*convo[:4]))
    run_hook(payload(path))
    # Replaced by a new file (new inode) holding two old lines and two new ones.
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(lines.encode(convo[0], convo[1], convo[4], convo[5]))
    os.replace(replacement, path)
    run_hook(payload(path))
    assert sorted(r[0] for r in stored()) == sorted(c["uuid"] for c in convo)
    # Shrunk in place (same inode): re-read from the start, still no duplicates.
    path.write_bytes(lines.encode(convo[0]))
    run_hook(payload(path))
    assert len(stored()) == 6
    assert [r[2] for r in stored()] == list(range(6))


def test_hook_picks_up_subagents_of_both_layouts(tmp_path):
    project = tmp_path / "proj"
    (project / "sess-1" / "subagents").mkdir(parents=True)
    (project / "sess-1.jsonl").write_bytes(lines.encode(*lines.conversation(2)))
    new_layout = [lines.user("find the config loader", isSidechain=True, agentId="a1"),
                  lines.assistant("it lives in config.py", isSidechain=True, agentId="a1")]
    (project / "sess-1" / "subagents" / "agent-a1.jsonl").write_bytes(lines.encode(*new_layout))
    old_layout = [lines.user("Warmup", isSidechain=True), lines.assistant("ready", isSidechain=True)]
    (project / "agent-0ld.jsonl").write_bytes(lines.encode(*old_layout))
    run_hook(payload(project / "sess-1.jsonl"))
    sessions = {r[1] for r in stored()}
    assert sessions == {"sess-1", "sess-1:agent-a1"}  # the Warmup subagent is not content


@pytest.mark.parametrize("raw", [
    b"", b"not json", b"[1, 2]", b'{"session_id": "s-bad"}', b'{"session_id": "s-bad", "transcript_path": 7}',
    b"\xff\xfe\x00garbage",
    b'{"session_id": "s-bad", "transcript_path": "/tmp/with\\u0000nul.jsonl"}',
])
def test_bad_payload_exits_zero_silently_and_logs(raw):
    run_hook(raw)
    log = hook_log()
    assert len(log) == 1 and log[0]["error"]
    if b"s-bad" in raw:
        assert log[0]["session_id"] == "s-bad"


def test_unwritable_journal_exits_zero_and_logs(tmp_path, monkeypatch):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(2)))
    run_hook(payload(path))
    os.chmod(paths.journal_path(), 0o400)
    os.chmod(paths.data_dir(), 0o500)
    try:
        if os.access(paths.journal_path(), os.W_OK):
            pytest.skip("running as a user that ignores file permissions")
        with open(path, "ab") as fh:
            fh.write(lines.encode(*lines.conversation(2, prefix="later")))
        run_hook(payload(path))
        assert hook_log() and "error" in hook_log()[-1]
    finally:
        os.chmod(paths.data_dir(), 0o700)
        os.chmod(paths.journal_path(), 0o600)
    assert len(stored()) == 2


def test_unusable_journal_exits_zero_and_logs(tmp_path):
    os.makedirs(paths.journal_path())  # a folder where the database file should be
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(2)))
    run_hook(payload(path))
    assert "journal" in hook_log()[-1]["error"]


def test_hook_import_path_stays_minimal(tmp_path):
    """No numpy, providers, MCP, Postgres driver, or heavy helpers on the hook's path."""
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(2)))
    code = ("import sys; from claude_chats import hook, jsonl; "
            f"hook.run(jsonl.loads({json.dumps(payload(path))!r}), hook.open_journal({{}})); "
            "sys.stdout.write(chr(10).join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=60).stdout
    loaded = set(out.decode().split())
    assert "claude_chats.localstore.writer" in loaded
    forbidden = {"json", "numpy", "psycopg", "pgvector", "llama_cpp", "fastmcp", "mcp", "boto3", "botocore", "httpx",
                 "openai", "sqlite_vec", "platformdirs", "click", "rich", "dataclasses", "logging", "tomllib",
                 "claude_chats.models", "claude_chats.mcp", "claude_chats.cli", "claude_chats.config",
                 "signal", "enum"}   # enum: 2-3 ms (faults imports signal only to kill)
    assert not (loaded & forbidden), loaded & forbidden
    assert len(stored()) == 2


def test_a_prompts_recall_hints_import_nothing_heavy(tmp_path):
    """The hints' path (full text over the index's parts) stays light too: ``faults`` is on it (through
    ``ftsparts``) and imported ``signal``, and with it ``enum`` (2-3 ms a prompt); the contexts' module and
    the ranker are imported only for a prompt that has something to rank (about half a millisecond)."""
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(6)))
    run_hook(payload(path))
    prompt = {**payload(path, session="sess-2", event="UserPromptSubmit"),
              "prompt": "why does the build fail when the tests of the parser run"}
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "claude_chats.hook"],
                          input=json.dumps(prompt).encode(), capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0
    loaded = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines() if "|" in line}
    assert {"claude_chats.localstore.hints", "claude_chats.localstore.ftsparts", "claude_chats.faults"} <= loaded
    # the contexts' module and the ranker only when something can be ranked and shown: common words here
    assert not (loaded & {"signal", "enum", "json", "re", "numpy", "logging", "dataclasses",
                          "claude_chats.localstore.recall", "claude_chats.localstore.bm25"}), loaded


COLLECTIONS_SEEN = """
import gc, os, sys
def seen(phase, info):
    if phase == "start" and "claude_chats.localstore.db" in sys.modules:
        os.write(2, b"collection of generation %d\\n" % info["generation"])
gc.callbacks.append(seen)
from claude_chats.hook import main
main()
"""


@pytest.mark.parametrize("event", ["Stop", "UserPromptSubmit"])
def test_the_hook_runs_without_the_cyclic_collector(tmp_path, event):
    """A hook process frees what it makes by reference counting: no garbage collection runs once it opens
    the journal (the collections its imports set off walked every loaded module's objects, 0.6-0.7 ms a
    run). Watched from inside a fresh process through ``gc.callbacks``."""
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(40)))
    run_hook(payload(path))
    data = {**payload(path, event=event), "prompt": "why does the build fail when the tests of the parser run"}
    proc = subprocess.run([sys.executable, "-c", COLLECTIONS_SEEN], input=json.dumps(data).encode(),
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == b"", proc.stderr.decode()[:500]
    assert len(stored()) == 40


def test_journal_files_are_owner_only(tmp_path):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(2)))
    run_hook(payload(path))
    run_hook(b"garbage")
    assert os.stat(paths.journal_path()).st_mode & 0o777 == 0o600
    assert os.stat(paths.data_dir()).st_mode & 0o777 == 0o700
    assert os.stat(os.path.join(paths.log_dir(), "hook.log")).st_mode & 0o777 == 0o600


def test_concurrent_hooks_store_each_message_exactly_once(tmp_path):
    """8 hooks on one growing transcript plus 4 other sessions, all at once."""
    main = tmp_path / "main.jsonl"
    others = [tmp_path / f"other-{i}.jsonl" for i in range(4)]
    main_lines = lines.conversation(120, session="main")
    other_lines = {p: lines.conversation(30, session=p.stem) for p in others}
    main.write_bytes(b"")
    for p, convo in other_lines.items():
        p.write_bytes(lines.encode(*convo))

    def writer():
        for i in range(0, len(main_lines), 3):
            with open(main, "ab") as fh:
                data = lines.encode(*main_lines[i:i + 3])
                fh.write(data[:len(data) // 2])  # a torn write: half a line, then the rest
                fh.flush()
                fh.write(data[len(data) // 2:])

    procs = []
    thread = threading.Thread(target=writer)
    thread.start()
    for round_ in range(3):
        for i in range(8):
            procs.append(subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
            procs[-1].stdin.write(json.dumps(payload(main, "main")).encode())
            procs[-1].stdin.close()
        for p in others:
            procs.append(subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
            procs[-1].stdin.write(json.dumps(payload(p, p.stem)).encode())
            procs[-1].stdin.close()
    thread.join()
    for proc in procs:
        assert proc.wait(timeout=120) == 0
        assert proc.stdout.read() == b""
    run_hook(payload(main, "main"))  # the last lines written after the racing hooks ran
    rows = stored()
    uuids = [r[0] for r in rows]
    assert len(uuids) == len(set(uuids)) == 120 + 4 * 30
    by_session = {}
    for _uuid, session, seq, _ in rows:
        by_session.setdefault(session, []).append(seq)
    assert all(seqs == list(range(len(seqs))) for seqs in by_session.values())
    assert [r[0] for r in stored("main")] == [c["uuid"] for c in main_lines]
    assert hook_log() == []


def test_the_journal_wal_stays_bounded_across_hook_runs(tmp_path):
    """The hook writes one transaction per process, from which SQLite never restarts a checkpointed
    WAL: without the hook's trim the WAL grows on every turn (and every commit pays a checkpoint).
    A big first import and many small turns leave it under the trim size; a reader holding the
    journal (a running sync) makes the trim give up at once, not wait."""
    from claude_chats.hook import WAL_TRIM_BYTES

    path = tmp_path / "sess-1.jsonl"
    words = "the sync retries with backoff while postgres restarts on port 5433 ".split()
    big = [lines.user(" ".join(words[(i + k) % len(words)] for k in range(400)), uid=f"u-{i}") for i in range(2500)]
    path.write_bytes(lines.encode(*big))
    run_hook(payload(path))                              # ~8 MB of journal pages through the WAL
    wal = paths.journal_path() + "-wal"
    assert os.path.getsize(wal) < WAL_TRIM_BYTES
    sizes = []
    for turn in range(60):
        with open(path, "ab") as fh:
            fh.write(lines.encode(lines.user(" ".join(words * 20), uid=f"t-{turn}")))
        run_hook(payload(path))
        sizes.append(os.path.getsize(wal))
    assert max(sizes) < WAL_TRIM_BYTES + (1 << 20), sizes
    reader = apsw.Connection(paths.journal_path())
    try:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM messages").fetchall()    # holds a read snapshot
        for turn in range(3):
            with open(path, "ab") as fh:
                fh.write(lines.encode(*big[:200]).replace(b'"u-', f'"r{turn}-'.encode()))
            started = time.monotonic()
            run_hook(payload(path))
            assert time.monotonic() - started < 5
    finally:
        reader.execute("COMMIT")
        reader.close()
    assert len(stored()) == 2500 + 60 + 600 and hook_log() == []


def wal_tables():
    """The b-trees (tables and indexes) whose pages the journal's WAL holds, by name."""
    import struct

    wal = paths.journal_path() + "-wal"
    data = open(wal, "rb").read() if os.path.exists(wal) else b""
    conn = apsw.Connection(paths.journal_path(), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        names = dict(conn.execute("SELECT pageno, name FROM dbstat").fetchall())
    finally:
        conn.close()
    size, found, at = struct.unpack(">I", data[8:12])[0] if data else 0, set(), 32
    while size and at + 24 + size <= len(data):
        found.add(names.get(struct.unpack(">I", data[at:at + 4])[0]))
        at += 24 + size
    return found


def test_a_turn_leaves_the_indexes_of_what_it_does_not_change_alone(tmp_path):
    """Each page a turn writes goes to the WAL (16 KB at a time), and every new hook process reads the
    whole WAL back (SQLite's recovery: it is the journal's first connection). The session's project and
    parent, set once, and the ``state`` key the hook rewrites each turn (``last_hook``) must not have
    their index pages written again by every turn."""
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(*[lines.user(f"turn {i} of the migration", uid=f"u-{i}") for i in range(50)]))
    run_hook(payload(path))
    conn = apsw.Connection(paths.journal_path())
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    assert conn.execute("SELECT project_path FROM sessions WHERE id = 'sess-1'").fetchall()[0][0]
    conn.close()
    assert not os.path.exists(paths.journal_path() + "-wal") or wal_tables() == set()
    with open(path, "ab") as fh:
        fh.write(lines.encode(lines.user("one more turn", uid="u-x"), lines.assistant("and its answer", uid="u-y")))
    run_hook(payload(path))
    written = wal_tables()
    assert {"messages", "sessions", "state", "raw_lines"} <= written, written      # the turn was stored
    assert not written & {"sessions_project", "sessions_parent", "sqlite_autoindex_state_1"}, written
    assert len(stored()) == 52 and hook_log() == []
