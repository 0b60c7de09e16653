"""Issue 17: ``chats restore`` (claude_chats/restore.py) writes a session back where Claude Code looks.

The real CLI resuming what it writes: tests/claude_code/test_restore.py. Here: the folder Claude
Code uses (its naming: tests/test_claudecode.py), subagents beside their parent, never overwriting a different file, the lines from
Postgres when the journal has none (redacted inside their JSON), purges reaching them.
"""

import json
import os
import shutil

import psycopg
import pytest

from claude_chats import config, paths, rawlines
from claude_chats.errors import RestoreError
from claude_chats.localstore.erase import Target
from claude_chats.localstore.journal import Journal
from claude_chats.purge import purge
from claude_chats.claudecode import transcript_path
from claude_chats.restore import restore
from claude_chats.sync.runner import run_sync
from tests.support import ROOT, lines
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder

FIXTURES = ROOT / "tests" / "claude_code" / "fixtures"
SESSION = "21d465c4-7100-437b-b1c4-101f4e63db35"       # print-subagent: a turn with a subagent
AGENT = "a2848ca3cd1b3d814"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _recorded(journal_path=None):
    """The print-subagent fixture imported into the journal; its transcript path."""
    with Journal.open(journal_path) as journal:
        assert not journal.import_files(sorted(str(p) for p in (FIXTURES / "print-subagent").rglob("*.jsonl"))).errors
        project = journal.session(SESSION)["project_path"]
    return transcript_path(SESSION, project)


def test_restore_writes_the_session_and_its_subagent_where_claude_code_looks():
    path = _recorded()
    assert path.startswith(os.path.join(paths.claude_projects_dir(), "-"))
    dry = chats("restore", SESSION, "--dry-run")
    assert dry.exit_code == 0 and "would write" in dry.output and not os.path.exists(path)
    result = chats("restore", SESSION)
    assert result.exit_code == 0, result.output
    agent = os.path.join(path[:-len(".jsonl")], "subagents", f"agent-{AGENT}.jsonl")
    assert os.path.exists(path) and os.path.exists(agent)
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert f"claude --resume {SESSION}" in result.output
    original = (FIXTURES / "print-subagent" / f"{SESSION}.jsonl").read_bytes().splitlines()
    written = open(path, "rb").read().splitlines()
    assert [json.loads(x)["uuid"] for x in written if b'"uuid"' in x] == \
        [json.loads(x)["uuid"] for x in original if b'"uuid"' in x and rawlines.kept(json.loads(x))]
    # the assistant after the left-out system prompt copy now follows the line before that copy
    by_uuid = {json.loads(x)["uuid"]: json.loads(x) for x in written if b'"uuid"' in x}
    assert all(o["parentUuid"] is None or o["parentUuid"] in by_uuid for o in by_uuid.values())
    assert "already there, unchanged" in chats("restore", SESSION).output


def test_a_different_transcript_there_is_never_overwritten_unless_forced():
    path = _recorded()
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as fh:
        fh.write(b'{"type":"user","uuid":"mine"}\n')
    refused = chats("restore", SESSION)
    assert refused.exit_code == 1
    assert "not overwritten" in refused.output and path in refused.output and "--force" in refused.output
    assert open(path, "rb").read() == b'{"type":"user","uuid":"mine"}\n'
    forced = chats("restore", SESSION, "--force")
    assert forced.exit_code == 0 and "replaced" in forced.output
    backups = [n for n in os.listdir(os.path.dirname(path)) if n.startswith(f"{SESSION}.jsonl.bak-")]
    assert len(backups) == 1


def test_restore_to_another_project_folder(tmp_path):
    _recorded()
    checkout = tmp_path / "checkout"
    result = chats("restore", SESSION, "--to", checkout, "--json")
    report = json.loads(result.output)
    assert report["project_path"] == str(checkout)
    assert report["files"][0]["path"] == transcript_path(SESSION, str(checkout))
    assert report["resume"] == f"cd {checkout} && claude --resume {SESSION}"


def test_sessions_without_kept_lines_say_why(empty_journal, tmp_path):
    unknown = chats("restore", "no-such-session")
    assert unknown.exit_code == 1 and "no session 'no-such-session'" in unknown.output
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(lines.encode(lines.user("hello")))
    empty_journal.import_files([str(path)])
    empty_journal.conn.execute("DELETE FROM raw_lines")   # as recorded before lines were kept
    older = chats("restore", "sess-1")
    assert older.exit_code == 1 and "not its transcript lines" in older.output and "chats show sess-1" in older.output


def test_another_machine_restores_from_postgres_redacted_inside_the_json(pg_db_url, tmp_path):
    folder = tmp_path / "projects" / "-work-proj"
    folder.mkdir(parents=True)
    (folder / "sess-1.jsonl").write_bytes(lines.encode(
        lines.user(f'deploy with token {SECRET} "now"'), lines.assistant("done \u00e9")))
    with Journal.open(str(tmp_path / "machine-a.db")) as journal:
        journal.import_files([str(folder / "sess-1.jsonl")])
        report = run_sync(config.load({"database_url": pg_db_url}), journal=journal, provider=HashEmbedder(),
                          lock=False)
        assert report.ok and report.raw_lines == 2, report.errors
        assert journal.conn.execute("SELECT count(*) FROM raw_lines WHERE synced = 0").fetchall() == [(0,)]
    with psycopg.connect(pg_db_url) as conn:
        stored = [rawlines.unpack(line) for (line,) in conn.execute("SELECT line FROM raw_lines ORDER BY seq")]
    assert [json.loads(x)["type"] for x in stored] == ["user", "assistant"]
    assert SECRET.encode() not in stored[0] and "[REDACTED:" in json.loads(stored[0])["message"]["content"]

    settings = config.load({"database_url": pg_db_url})
    with Journal.open(str(tmp_path / "machine-b.db")) as other:
        report = restore("sess-1", settings=settings, journal=other)
    assert report.source == "postgres" and report.project_path == "/work/proj"
    written = open(report.files[0].path, "rb").read().splitlines()
    assert [json.loads(x)["type"] for x in written] == ["user", "assistant"]
    assert json.loads(written[1])["message"]["content"][0]["text"] == "done é"

    purge(Target.of(session="sess-1"), settings=settings, journal=Journal.open(str(tmp_path / "machine-a.db")))
    with psycopg.connect(pg_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM raw_lines").fetchone()[0] == 0
    shutil.rmtree(os.path.dirname(report.files[0].path))
    with Journal.open(str(tmp_path / "machine-b.db")) as other, pytest.raises(RestoreError):
        restore("sess-1", settings=settings, journal=other)
