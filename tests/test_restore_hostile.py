"""Issue 21, item 2: ``chats restore`` writes only inside ``projects/<folder>/``, whatever the rows say.

Another machine (plain SQL into a real Postgres) or a transcript line names the session and agent
ids restore makes file names of, the project path the folder name and the resume line come from,
and the kept lines' bytes. Each hostile value is refused at ingest (the hook, ``chats import``) and
at restore, with one line saying why or a note, never a traceback, never a file outside the folder,
never a planted link followed nor a backup overwritten, never a bomb unpacked whole. The property
test at the end generates the ids, names and JSON shapes.
"""

import json
import os
import pathlib
import resource
import subprocess
import tempfile
import time
import zlib

import psycopg
import pytest
from hypothesis import given, seed
from hypothesis import strategies as st

from claude_chats import config, paths, rawlines, transcript
from claude_chats.claudecode import transcript_path
from claude_chats.errors import RestoreError
from claude_chats.localstore import writer
from claude_chats.localstore.journal import Journal
from claude_chats.pgstore.store import PgStore
from claude_chats.restore import restore
from tests.support import ROOT, lines
from tests.support.cli import chats
from tests.support.corpus import CORPUS
from tests.support.fuzzing import HOSTILE_IDS, HOSTILE_PATHS, fuzz_settings, json_values, tree
from tests.support.hooks import CHATS, HOOK

SESSION = "5de512e1-8a19-4408-b753-822dd8f9d4de"
OTHER = "9754e15d-f1cf-4da6-b0fe-39d9631e4b80"
PROJECT = "/work/proj"
ESCAPES = "/work/\x1b]0;owned\x07\x1b[2J\x1b[31mproj\r\n# rm -rf ~"
FIXTURES = ROOT / "tests" / "claude_code" / "fixtures"


def _run(*args, limit_memory=None):
    """``chats <args>`` as a process of its own: (exit code, stdout, stderr)."""
    def preexec():
        resource.setrlimit(resource.RLIMIT_AS, (limit_memory, limit_memory))

    proc = subprocess.run(CHATS + [str(a) for a in args], capture_output=True, text=True, timeout=120,
                          preexec_fn=preexec if limit_memory else None)
    return proc.returncode, proc.stdout, proc.stderr


def _one_line_error(code, out, err):
    assert code == 1 and "Traceback" not in err + out, err[-3000:]
    message = err.strip()
    assert message.startswith("Error: ") and "\n" not in message, err
    return message


def _line(text, session=SESSION, uid="00000000-0000-4000-8000-000000000001", **extra):
    return lines.encode(lines.user(text, session=session, uid=uid, cwd=PROJECT, **extra)).strip()


def _other_machine(url, conversations):
    """What another machine pushed, as plain SQL: ``{session id: (project path, parent, [line bytes])}``."""
    PgStore.open(url).close()   # the schema, as a first sync makes it
    with psycopg.connect(url) as conn:
        for session, (project, parent, rows) in conversations.items():
            cid = conn.execute("INSERT INTO conversations (session_id, project_path, parent_session_id, machine) "
                               "VALUES (%s, %s, %s, 'other') RETURNING id", (session, project, parent)).fetchone()[0]
            for seq, line in enumerate(rows):
                conn.execute("INSERT INTO raw_lines (conversation_id, line_key, seq, line) VALUES (%s, %s, %s, %s)",
                             (cid, f"k{seq}", seq, line))


def _files(root):
    """What is under ``root``, the journal's folder left out."""
    return {p for p in tree(root) if not (p == "chats-home" or p.startswith("chats-home" + os.sep))}


def _outside(root, before, folder):
    """What appeared under ``root`` since ``before`` that is not the journal nor inside ``folder``."""
    inside = os.path.relpath(folder, root)
    return sorted(p for p in _files(root) - before
                  if not (p == inside or p.startswith(inside + os.sep) or inside.startswith(p + os.sep)))


# -- at ingest: the hook and `chats import` refuse ids Claude Code does not write -------------------

@pytest.mark.parametrize("hostile", ["../../../../elsewhere/pwn", "ABSOLUTE/elsewhere/pwn", "a" * 5000,
                                     "nul\x00id", "-rf", "x\\..\\..\\y", "esc\x1b[2J"])
def test_a_transcript_line_with_a_hostile_session_id_is_refused_by_the_hook_and_by_import(tmp_path, monkeypatch,
                                                                                         hostile):
    hostile = hostile.replace("ABSOLUTE", str(tmp_path))   # (projects/-work-proj/../../../../: tmp_path too)
    folder = pathlib.Path(paths.claude_projects_dir()) / "-work-proj"
    folder.mkdir()
    path = folder / f"{SESSION}.jsonl"
    path.write_bytes(_line("a planted line", session=hostile) + b"\n"
                     + _line("a real one", uid="00000000-0000-4000-8000-000000000002") + b"\n")
    hook = subprocess.run(HOOK, input=json.dumps({"session_id": SESSION, "transcript_path": str(path),
                                                  "hook_event_name": "Stop", "cwd": PROJECT}).encode(),
                          capture_output=True, timeout=60)
    assert (hook.returncode, hook.stdout) == (0, b""), hook.stderr[-2000:]
    code, out, err = _run("import", str(folder), "--json")   # again: nothing new, nothing refused twice
    assert code == 0 and "Traceback" not in err, err
    with Journal.open() as journal:
        assert [s["session_id"] for s in journal.sessions(limit=10)] == [SESSION]
        skipped = journal.skipped_lines()
    assert any(reason.startswith("refused session id") for reason in skipped), skipped

    with monkeypatch.context() as fresh:   # a fresh journal: `chats import` alone says what it refused
        fresh.setenv("CLAUDE_CHATS_HOME", str(tmp_path / "other"))
        code, out, err = _run("import", str(path), "--json")
    summary = json.loads(out)
    assert code == 0 and summary["sessions"] == 1 and summary["messages"] == 1, (out, err)
    assert [r for r in summary["skipped_by_reason"] if r.startswith("refused session id")], summary

    if "\x00" in hostile:
        return   # no argument can hold a NUL
    before = _files(tmp_path)
    message = _one_line_error(*_run("restore", "--", hostile))
    assert "not a session id Claude Code writes" in message and len(message) < 400 and "\x1b" not in message
    assert _files(tmp_path) == before


@pytest.mark.parametrize("event, fields", [("Stop", {"session_id": "../../../elsewhere/pwn"}),
                                           ("SubagentStop", {"session_id": SESSION, "agent_id": "../../pwn"})])
def test_a_final_answer_of_a_hostile_session_id_in_the_hook_payload_is_not_stored(tmp_path, event, fields):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(_line("a question") + b"\n")
    hook = subprocess.run(HOOK, input=json.dumps({"transcript_path": str(path), "hook_event_name": event,
                                                  "cwd": PROJECT, "last_assistant_message": "the answer",
                                                  **fields}).encode(), capture_output=True, timeout=60)
    assert (hook.returncode, hook.stdout) == (0, b""), hook.stderr[-2000:]
    with Journal.open() as journal:
        assert [s["session_id"] for s in journal.sessions(limit=10, include_subagents=True)] == [SESSION]
        assert [m["content"] for m in journal.messages(SESSION)] == ["a question"]


def test_a_subagent_file_or_line_with_a_hostile_agent_id_is_refused(tmp_path):
    folder = pathlib.Path(paths.claude_projects_dir()) / "-work-proj"
    (folder / SESSION / "subagents").mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_bytes(_line("main") + b"\n")
    (folder / "agent-..jsonl").write_bytes(   # the older layout: beside the sessions
        _line("old layout", uid="00000000-0000-4000-8000-000000000003", isSidechain=True) + b"\n")
    (folder / SESSION / "subagents" / "agent-a1 b.jsonl").write_bytes(
        _line("a file named as Claude Code never names one", uid="00000000-0000-4000-8000-000000000004") + b"\n")
    code, out, err = _run("import", str(folder), "--json")
    summary = json.loads(out)
    assert code == 0 and summary["sessions"] == 1, (out, err)
    assert summary["skipped_by_reason"].get("refused agent id: not only letters, digits, - and _") == 2, summary


def test_every_id_of_the_real_transcripts_is_of_claude_codes_shape(tmp_path):
    """None refused: the session ids (UUIDs) and agent ids (hex, acompact-<hex>...) of the corpus and
    of the real CLI's fixtures, from their lines and from their file names."""
    files = sorted(FIXTURES.rglob("*.jsonl")) + (sorted(CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else [])
    ids = set()
    for path in files:
        ctx = transcript.FileContext.for_path(str(path))
        ids.update(i for i in (ctx.fallback_session_id, ctx.agent_id) if i)
        for raw in path.read_bytes().splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                ids.update(obj[k] for k in ("sessionId", "agentId") if isinstance(obj.get(k), str))
    assert len(ids) > 20 and "a2848ca3cd1b3d814" in ids
    assert {i: transcript.id_problem(i) for i in ids if transcript.id_problem(i)} == {}
    for shape in ("acompact-0a1b2c3d4e5f6a7b", "aprompt_suggestion-a637779", "aside_question-94d26433f3755c77"):
        assert transcript.id_problem(shape) is None   # 2.1.x's own subagents (compaction, suggestions, /btw)
    with Journal.open(str(tmp_path / "corpus.db")) as journal:
        stats = journal.import_files([str(p) for p in files])
    assert not stats.errors and not [r for r in stats.skipped if r.startswith("refused")], stats.skipped


# -- at restore: rows another machine pushed ------------------------------------------------------

def _restorable(pg_db_url, monkeypatch, extra=None, project=PROJECT):
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    rows = [zlib.compress(_line("hello from the other machine")),
            zlib.compress(_line("and its answer", uid="00000000-0000-4000-8000-000000000005"))]
    _other_machine(pg_db_url, {SESSION: (project, None, rows), **(extra or {})})
    return transcript_path(SESSION, project)


def test_hostile_conversations_another_machine_pushed_are_skipped_with_a_note(tmp_path, pg_db_url, monkeypatch):
    line = [zlib.compress(_line("planted", uid="00000000-0000-4000-8000-000000000009"))]
    main = _restorable(pg_db_url, monkeypatch, {
        f"{SESSION}:agent-../../../../../../elsewhere/pwn": (PROJECT, SESSION, line),   # tmp_path/elsewhere
        f"{SESSION}:agent-/elsewhere/abs": (PROJECT, SESSION, line),
        f"{SESSION}:agent-{'b' * 5000}": (PROJECT, SESSION, line),
        "../../../../elsewhere/no-agent-mark": (PROJECT, SESSION, line),
        f"{OTHER}:agent-a1": (PROJECT, SESSION, line),
        f"{SESSION}:agent-a7f3": (PROJECT, SESSION, line),     # a real one among them
    })
    before = tree(tmp_path)
    code, out, err = _run("restore", SESSION)
    assert code == 0 and "Traceback" not in err, err
    assert _outside(tmp_path, before, os.path.dirname(main)) == []
    assert os.path.exists(main) and os.path.exists(os.path.join(main[:-6], "subagents", "agent-a7f3.jsonl"))
    notes = [line for line in out.splitlines() if line.startswith("skipped ")]
    assert len(notes) == 5 and all(len(n) < 400 for n in notes), out
    assert sum("not an agent id Claude Code writes" in n for n in notes) == 3, notes
    assert not (tmp_path / "elsewhere").exists()
    report = json.loads(_run("restore", SESSION, "--json")[1])
    assert len(report["skipped"]) == 5 and [f["status"] for f in report["files"]] == ["unchanged", "unchanged"]


def test_a_hostile_project_path_gives_a_safe_folder_and_no_escape_sequence_on_the_terminal(
        tmp_path, pg_db_url, monkeypatch):
    main = _restorable(pg_db_url, monkeypatch, project=ESCAPES)
    code, out, err = _run("restore", SESSION)
    assert code == 0, err
    folder = os.path.basename(os.path.dirname(main))
    assert os.path.exists(main) and folder.startswith("-work-") and set(folder) <= set("-0123456789abcdefghijklmnopqrs"
                                                                                   "tuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert "\x1b" not in out + err and "\x07" not in out and "\r" not in out
    assert "no resume line" in out and "\\x1b" in out and f"claude --resume {SESSION}" in out

    recorded = tmp_path / f"{OTHER}.jsonl"   # the same path in a transcript line: `chats sessions`
    recorded.write_bytes(lines.encode(lines.user("hi", session=OTHER, cwd=ESCAPES)))
    with Journal.open() as journal:
        journal.import_files([str(recorded)])
    code, out, err = _run("sessions")
    assert code == 0 and OTHER in out and "\x1b" not in out and "\x07" not in out and "\r" not in out, out
    assert "\\x1b]0;owned" in out


@pytest.mark.parametrize("bad", ["not zlib", "cut short", "bomb"])
def test_a_bad_or_huge_packed_line_is_one_line_of_error_and_bounded_memory(tmp_path, pg_db_url, monkeypatch, bad):
    if bad == "bomb":   # 1.2 GB of zeros from about 1.2 MB, made a megabyte at a time
        packer, chunk = zlib.compressobj(9), bytes(1 << 20)
        blob = b"".join(packer.compress(chunk) for _ in range(1200)) + packer.flush()
    else:
        blob = b"x\x9c not a zlib stream" if bad == "not zlib" else zlib.compress(_line("cut"))[:-6]
    main = _restorable(pg_db_url, monkeypatch, {f"{SESSION}:agent-a1": (PROJECT, SESSION, [blob])})
    before = _files(tmp_path)
    message = _one_line_error(*_run("restore", SESSION, limit_memory=1 << 30))
    assert "kept line" in message and "nothing was written" in message, message
    assert _files(tmp_path) == before and not os.path.exists(main)


@pytest.mark.parametrize("where", ["the projects folder", "the project's folder", "the session's folder"])
def test_a_file_where_a_folder_must_be_is_one_line_of_error(tmp_path, pg_db_url, monkeypatch, where):
    main = _restorable(pg_db_url, monkeypatch, {f"{SESSION}:agent-a1": (PROJECT, SESSION, [
        zlib.compress(_line("agent", uid="00000000-0000-4000-8000-000000000007"))])})
    projects = paths.claude_projects_dir()
    blocker = {"the projects folder": projects, "the project's folder": os.path.dirname(main),
               "the session's folder": main[:-6]}[where]
    if os.path.isdir(blocker):
        os.rmdir(blocker)
    os.makedirs(os.path.dirname(blocker), exist_ok=True)
    pathlib.Path(blocker).write_bytes(b"a file")
    for args in (("restore", SESSION), ("restore", SESSION, "--dry-run")):
        message = _one_line_error(*_run(*args))
        assert "is not a folder" in message or "cannot write" in message, message
    assert pathlib.Path(blocker).read_bytes() == b"a file"


# -- writing: no link followed, no backup lost -------------------------------------------------------

def test_a_link_planted_at_the_temporary_name_is_never_followed(tmp_path):
    journal_path = str(tmp_path / "j.db")
    with Journal.open(journal_path) as journal:
        assert not journal.import_files(sorted(str(p) for p in (FIXTURES / "print-subagent").rglob("*.jsonl"))).errors
        session = "21d465c4-7100-437b-b1c4-101f4e63db35"
        main = transcript_path(session, journal.session(session)["project_path"])
        victim = tmp_path / "victim.txt"
        victim.write_bytes(b"precious")
        os.makedirs(os.path.dirname(main))
        os.symlink(victim, f"{main}.restoring-{os.getpid()}")   # this process is the one restoring
        report = restore(session, journal=journal)
    assert victim.read_bytes() == b"precious"
    assert [f.status for f in report.files] == ["written", "written"]
    assert open(main, "rb").read().count(b"\n") == report.files[0].lines
    assert os.path.islink(f"{main}.restoring-{os.getpid()}")   # left alone: not ours
    assert not [n for n in os.listdir(os.path.dirname(main)) if ".restoring-" in n and not os.path.islink(
        os.path.join(os.path.dirname(main), n))]


def test_forced_restores_in_the_same_second_keep_every_backup(tmp_path, pg_db_url, monkeypatch):
    main = _restorable(pg_db_url, monkeypatch)
    os.makedirs(os.path.dirname(main))
    now = time.time()
    planted = {f"{main}.bak-{time.strftime('%Y%m%dT%H%M%S', time.localtime(now + s))}": b"backup %d\n" % s
               for s in range(-2, 120)}   # a backup of every second from now on is there already
    for name, data in planted.items():
        pathlib.Path(name).write_bytes(data)
    versions = [b'{"type":"user","uuid":"mine-1"}\n', b'{"type":"user","uuid":"mine-2"}\n']
    for version in versions:
        pathlib.Path(main).write_bytes(version)
        code, out, err = _run("restore", SESSION, "--force")
        assert code == 0 and "replaced" in out, err
        pathlib.Path(main).write_bytes(version)   # and again, at once: the same second
        assert _run("restore", SESSION, "--force")[0] == 0
    assert {name: pathlib.Path(name).read_bytes() for name in planted} == planted
    backups = sorted(n for n in os.listdir(os.path.dirname(main)) if ".bak-" in n)
    kept = [pathlib.Path(os.path.dirname(main), n).read_bytes() for n in backups]
    assert sorted(k for k in kept if k.startswith(b'{"type"')) == sorted(versions * 2)
    assert len(backups) == len(planted) + 4


# -- the property: whatever the ids, names and lines, nothing lands outside the folder ----------------

agent_ids = st.one_of(st.sampled_from(HOSTILE_IDS + ["a1", "acompact-0af3", "aprompt_suggestion-a6"]),
                      st.text(max_size=30))
conversation_ids = st.one_of(
    st.builds(lambda a: f"{SESSION}:agent-{a}", agent_ids), st.sampled_from(HOSTILE_IDS), st.text(max_size=30),
    st.builds(lambda a, b: f"{a}:agent-{b}", st.sampled_from(HOSTILE_IDS), agent_ids))
projects = st.one_of(st.sampled_from(HOSTILE_PATHS + [ESCAPES, "/", ".", "..", "-", "/work/\ud800"]),
                     st.text(max_size=60))
line_bytes = st.one_of(
    json_values.map(lambda v: json.dumps(v).encode()),
    st.builds(lambda s, v: json.dumps({"type": "user", "sessionId": s, "uuid": "u", "cwd": "/x",
                                       "message": {"role": "user", "content": v}}).encode(),
              st.sampled_from(HOSTILE_IDS), json_values),
    st.binary(max_size=40), st.just(b"x\x9c\x00\x01"), st.just(zlib.compress(b'{"type":"user"}')))


@seed(2102)
@fuzz_settings(60, 2_000)
@given(st.one_of(st.just(SESSION), st.sampled_from(HOSTILE_IDS), st.text(max_size=30)), projects,
       st.lists(st.tuples(conversation_ids, st.lists(line_bytes, min_size=1, max_size=3)), max_size=4),
       st.booleans(), st.booleans())
def test_restore_never_writes_outside_its_folder(session, project, children, force, to):
    """Rows as a hostile journal or machine could hold them (any session id, project path, child
    conversation and line): restore writes its files inside ``projects/<folder>/`` or raises a
    ``RestoreError`` saying why (one line; the refusal to overwrite names the files); nothing else."""
    with tempfile.TemporaryDirectory() as root:
        projects_dir = os.path.join(root, "claude", "projects")
        os.makedirs(projects_dir)
        with Journal.open(os.path.join(root, "journal.db")) as journal:
            conn = journal.conn
            rows = [(session, b'{"type":"user","uuid":"u0","message":{"role":"user","content":"hi"}}')]
            rows += [(conversation, line) for conversation, some in children for line in some]
            session, project = _storable(session), _storable(project)
            conn.execute("INSERT INTO sessions (id, project_path, machine, updated_at) VALUES (?, ?, 'm', 'now')",
                         (session, project))
            for seq, (conversation, line) in enumerate(rows):
                conversation = _storable(conversation)
                conn.execute("INSERT OR IGNORE INTO sessions (id, parent_session_id, machine, updated_at) "
                             "VALUES (?, ?, 'm', 'now')", (conversation, session))
                conn.execute("INSERT OR IGNORE INTO raw_lines (session, seq, key, parent, line, packed) "
                             "VALUES (?, ?, ?, NULL, ?, 0)",
                             (writer.session_number(conn, conversation), seq, f"k{seq}", line))
            before = tree(root)
            settings = config.load({"database_url": None})
            try:
                report = restore(session, to=os.path.join(root, "there") if to else None, force=force,
                                 settings=settings, journal=journal, projects_dir=projects_dir)
            except RestoreError as exc:
                message = str(exc)
                assert "\x1b" not in message and (len(message.splitlines()) == 1 or "not overwritten" in message)
                report = None
        created = tree(root) - before
        if report is not None:
            folder = os.path.dirname(transcript_path(session, report.project_path, projects_dir))
            assert os.path.realpath(folder).startswith(os.path.realpath(projects_dir) + os.sep)
            for f in report.files:
                assert os.path.realpath(f.path).startswith(os.path.realpath(folder) + os.sep), f.path
            assert "\x1b" not in report.resume and "\n" not in report.resume
        allowed = {"journal.db", "journal.db-wal", "journal.db-shm"}
        for p in created - allowed:
            real = os.path.realpath(os.path.join(root, p))
            assert real.startswith(os.path.realpath(projects_dir) + os.sep), p
            assert os.path.relpath(real, os.path.realpath(projects_dir)).count(os.sep) <= 3, p


def _storable(text):
    """``text`` as SQLite can hold it (a lone surrogate as ``?``)."""
    return text.encode("utf-8", "replace").decode("utf-8")
