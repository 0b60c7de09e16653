"""`chats status` and `chats doctor` over a real journal, a real Postgres and the real test model."""

import json
import os
import subprocess
import sys

import pytest

from claude_chats import config, paths, status
from claude_chats.localstore.journal import Journal
from claude_chats.models import with_text
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder
from tests.support.plugin import install_plugin


def write_transcript(session="s-1", n=4, project="-work-app"):
    folder = os.path.join(paths.claude_projects_dir(), project)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{session}.jsonl")
    with open(path, "ab") as fh:
        fh.write(lines.encode(*lines.conversation(n, session=session)))
    return path


def imported(*sessions, n=4):
    files = [write_transcript(s, n) for s in sessions]
    with Journal.open() as journal:
        journal.import_files(files)
    return files


def test_status_of_a_fresh_machine_says_what_to_do():
    result = chats("status", "--offline")
    assert result.exit_code == 0
    assert "not created yet" in result.output and "chats install" in result.output
    report = json.loads(chats("status", "--json", "--offline").output)
    assert report["journal"]["exists"] is False and report["postgres"] == {"checked": False, "configured": False}


def test_status_counts_the_journal_the_hook_and_postgres(pg_db_url, monkeypatch):
    imported("s-1", "s-2")
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    with Journal.open() as journal:
        journal.set_state("last_hook", json.dumps({"at": "2025-01-01T00:00:00Z", "event": "Stop", "messages": 2}))
        report = run_sync(config.load(), journal=journal, provider=HashEmbedder())
    assert report.ok, report.errors
    imported("s-3", n=2)
    report = status.collect(check_provider=False)
    j = report["journal"]
    assert (j["sessions"], j["messages"], j["synced"], j["pending"]) == (3, 10, 8, 2)
    assert j["bytes"] > 0
    assert report["hook"]["last_run"]["event"] == "Stop"
    assert report["sync"]["last"]["ok"] is True and report["sync"]["running"] is False
    pg = report["postgres"]
    assert pg["reachable"] is True and pg["latency_ms"] >= 0
    assert pg["counts"]["conversations"] == 2 and pg["counts"]["messages"] == 8
    assert pg["counts"]["vectors"] == {HashEmbedder().space.key: 8}
    text = "\n".join(status.render(report))
    assert "3 sessions, 10 messages: 8 synced, 2 pending" in text
    assert "2 conversations, 8 messages" in text and "reachable" in text


def test_status_shows_the_backlog_its_estimate_and_a_running_syncs_progress():
    from claude_chats.sync.lock import SyncLock

    imported("s-1", "s-2")
    provider = HashEmbedder()
    with Journal.open() as journal:
        assert run_sync(config.load(), journal=journal, provider=provider, lock=False).ok   # journal only
    report = status.collect(check_postgres=False, check_provider=False)
    assert report["sync"]["last"]["space"] == provider.space.key
    assert report["sync"]["backlog"]["messages"] == 0
    assert "backlog: none" in "\n".join(status.render(report))
    assert "8 messages: journal only (no Postgres to push them to)" in "\n".join(status.render(report))
    files = imported("s-3", n=2)
    size = sum(len(m["content"]) for m in Journal.open().messages("s-3"))
    backlog = status.collect(check_postgres=False, check_provider=False)["sync"]["backlog"]
    assert (backlog["messages"], backlog["chars"]) == (2, size) and backlog["estimate_seconds"] >= 0, backlog
    with Journal.open() as journal:
        journal.set_state("sync_progress", json.dumps({
            "started_at": "2026-12-01T10:00:00Z", "pid": 4242, "messages_done": 300, "messages_total": 1000,
            "chars_done": 30_000, "chars_total": 100_000, "seconds": 65.0, "eta_seconds": 151.6}))
    assert status.collect(check_postgres=False, check_provider=False)["sync"]["progress"] is None   # not running
    with SyncLock():
        text = "\n".join(status.render(status.collect(check_postgres=False, check_provider=False)))
    assert "running since 2026-12-01T10:00:00Z (pid 4242): 300 of 1,000 messages, 30% of the text, " \
           "1 min 05 s so far, about 2 min 32 s left" in text, text
    assert f"backlog: 2 messages to embed ({size:,} characters), about " in text and files


def test_status_imports_no_numpy():
    """`chats status` as a fresh process, over a journal with vectors and a backlog to count, loads neither
    numpy nor simsimd (70-100 ms of its 0.22-0.28 s at 1M messages): what it reads of the outbox, the purge's
    tombstones and the embedding recipe's limits needs neither."""
    imported("s-1")
    with Journal.open() as journal:
        assert run_sync(config.load(), journal=journal, provider=HashEmbedder(), lock=False).ok
    imported("s-2", n=2)
    code = ("import sys; from claude_chats.cli import main; sys.argv = ['chats', 'status', '--offline']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    loaded = set(done.stderr.rpartition("MODULES ")[2].split())
    assert "backlog: 2 messages to embed" in done.stdout, done.stdout + done.stderr
    assert "claude_chats.models.recipe" in loaded and "claude_chats.localstore.outbox" in loaded
    assert not loaded & {"numpy", "simsimd", "sqlite_vec", "psycopg"}, loaded & {"numpy", "simsimd", "sqlite_vec", "psycopg"}


def test_status_reports_postgres_down_and_the_last_hook_error(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://me:pw@127.0.0.1:1/none?connect_timeout=2")
    os.makedirs(paths.log_dir(), exist_ok=True)
    with open(os.path.join(paths.log_dir(), "hook.log"), "w") as fh:
        fh.write(json.dumps({"at": "2025-01-02T00:00:00Z", "error": "FileNotFoundError: transcript not found"}) + "\n")
    report = status.collect(check_provider=False)
    assert report["postgres"]["reachable"] is False and "cannot reach Postgres" in report["postgres"]["error"]
    assert "pw" not in json.dumps(report["postgres"])
    assert report["hook"]["last_error"]["error"].startswith("FileNotFoundError")
    assert "unreachable" in "\n".join(status.render(report))


def test_status_loads_the_configured_model(test_model_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    section = status.provider_section(config.load())
    assert section["available"] is True and "llama" in section["space"]
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", "/nowhere/model.gguf")
    section = status.provider_section(config.load())
    assert section["available"] is False and "/nowhere/model.gguf" in section["error"]


# -- doctor ------------------------------------------------------------------------------

from claude_chats import doctor, install  # noqa: E402


@pytest.fixture
def healthy(tmp_path, monkeypatch, pg_db_url, test_model_path, minilm):
    """A machine where every check passes: installed, MCP registered, imported, synced with the test model."""
    monkeypatch.setenv("PATH", str(tmp_path))              # no `claude` CLI: install prints the MCP command
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    monkeypatch.setenv("CLAUDE_CHATS_THREADS", "2")
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    with open(install.settings_path(), "w") as fh:         # the test transcripts are dated 2026-01-01
        json.dump({"cleanupPeriodDays": 100000, "model": "opus"}, fh)
    assert chats("install").exit_code == 0
    chats_path = install.installed_script("chats")
    with open(doctor.claude_json_path(), "w") as fh:       # what `claude mcp add --scope user` writes
        json.dump({"numStartups": 3, "mcpServers": {"conversation-memory": {
            "type": "stdio", "command": chats_path, "args": ["mcp"], "env": {}}}}, fh)
    imported("s-1", "s-2")
    provider = with_text(minilm, config.load())            # as configured: the default embedded text
    with Journal.open() as journal:
        report = run_sync(config.load(), journal=journal, provider=provider, lock=False)
    assert report.ok, report.errors
    return {"url": pg_db_url, "key": provider.space.key}


def results():
    return {r.name: r for r in doctor.run()}


def failing(name, status=doctor.FAIL):
    checks = results()
    assert checks[name].status == status, checks[name]
    others = [c for c in checks.values() if c.name != name and c.status in (doctor.FAIL, doctor.WARN)]
    assert others == [], others
    if status != doctor.SKIP:
        assert checks[name].fix
    return checks[name]


def test_doctor_passes_on_a_healthy_machine(healthy):
    checks = results()
    assert {c.status for c in checks.values()} == {doctor.PASS}, [c for c in checks.values() if c.status != "pass"]
    assert set(checks) == {"hooks", "mcp", "config", "scrub", "journal", "fts", "transcripts", "cleanup", "model",
                           "canary", "tls", "postgres", "pgvector", "migrations"}
    result = chats("doctor")
    assert result.exit_code == 0 and "FAIL" not in result.output
    assert "full checks skipped" in result.output and "`chats doctor --full`" in result.output
    full = chats("doctor", "--full")
    assert full.exit_code == 0 and "integrity_check ok" in full.output and "full checks skipped" not in full.output


def test_doctor_hooks_missing(healthy):
    chats("uninstall")
    assert "chats install" in failing("hooks").fix
    assert chats("doctor").exit_code == 1


def test_doctor_hook_pointing_at_a_removed_executable(healthy):
    path = install.settings_path()
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(text.replace(install.installed_script("record-conversation"), "/gone/venv/bin/record-conversation"))
    assert "/gone/venv/bin/record-conversation" in failing("hooks").detail


def test_doctor_hooks_and_the_plugin_both_enabled(healthy, tmp_path):
    install_plugin(tmp_path)
    assert "recorded twice" in failing("hooks", doctor.WARN).detail


def test_doctor_mcp_not_registered(healthy):
    with open(doctor.claude_json_path(), "w") as fh:
        json.dump({"mcpServers": {"other": {"command": "npx", "args": []}}}, fh)
    assert "claude mcp add --scope user conversation-memory" in failing("mcp").fix


def test_doctor_config_unreadable(healthy):
    with open(paths.config_path(), "w") as fh:
        fh.write("provider = = 'x'\n")
    checks = results()
    assert checks["config"].status == doctor.FAIL and paths.config_path() in checks["config"].detail


def test_doctor_journal_damaged(healthy):
    path = paths.journal_path()
    with Journal.open() as journal:
        journal.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = journal.conn.execute("PRAGMA page_size").fetchall()[0][0]
    with open(path, "r+b") as fh:          # scribble over every page but the first (the header)
        size = os.path.getsize(path)
        for offset in range(page_size, size, page_size):
            fh.seek(offset + 8)
            fh.write(b"\xff" * 64)
    checks = results()
    assert checks["journal"].status == doctor.FAIL and checks["journal"].fix


def test_doctor_fts_out_of_step(healthy):
    with Journal.open() as journal:
        journal.conn.execute("INSERT INTO messages_fts(rowid, content) VALUES (999999, 'a ghost entry')")
    assert "rebuild" in failing("fts").fix


def test_doctor_transcripts_never_imported(healthy):
    write_transcript("s-new", 2, project="-work-other")
    assert failing("transcripts").fix == "chats import"


def test_doctor_cleanup_period_shorter_than_the_history(healthy):
    with open(install.settings_path()) as fh:
        settings = json.load(fh)
    with open(install.settings_path(), "w") as fh:
        json.dump({**settings, "cleanupPeriodDays": 30}, fh)
    folder = os.path.join(paths.claude_projects_dir(), "-old")
    os.makedirs(folder)
    path = os.path.join(folder, "s-old.jsonl")
    with open(path, "wb") as fh:
        fh.write(lines.encode(lines.user("from long ago", session="s-old", ts="2020-01-01T00:00:00.000Z")))
    with Journal.open() as journal:
        journal.import_files([path])
    check = failing("cleanup", doctor.WARN)
    assert "cleanupPeriodDays" in check.detail and "journal keeps them" in check.detail


def test_doctor_model_missing(healthy, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", "/nowhere/model.gguf")
    checks = results()
    assert checks["model"].status == doctor.FAIL and "/nowhere/model.gguf" in checks["model"].detail
    assert checks["canary"].status == doctor.SKIP


def test_doctor_canary_does_not_reproduce(healthy):
    import numpy as np
    import psycopg
    wrong = np.ones(len(np.frombuffer(b"\0" * 4 * 384, dtype=np.float32)), dtype=np.float32)
    with psycopg.connect(healthy["url"], autocommit=True) as conn:
        conn.execute("UPDATE spaces SET canary = %s::vector", (str(wrong.tolist()),))
    check = failing("canary")
    assert "postgres" in check.detail and "canary" in check.detail


def test_doctor_stored_vectors_of_another_model(healthy):
    import psycopg
    with psycopg.connect(healthy["url"], autocommit=True) as conn:
        conn.execute("UPDATE spaces SET key = 'ollama/nomic-embed-text/768/{}'")
    assert "none of the configured" in failing("canary").detail


def test_doctor_postgres_down(healthy, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://me:pw@127.0.0.1:1/none?connect_timeout=2")
    check = failing("postgres")
    assert "cannot reach Postgres" in check.detail and "pw" not in check.detail


def test_doctor_remote_without_tls(healthy, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://me@db.example.invalid/chats?sslmode=disable&connect_timeout=2")
    checks = results()
    assert checks["tls"].status == doctor.FAIL and "sslmode=verify-full" in checks["tls"].fix
    assert checks["postgres"].status == doctor.FAIL


def test_doctor_pgvector_missing_and_migrations_pending(healthy, pg_url, monkeypatch):
    import uuid

    import psycopg

    from tests.support.pg import with_database
    name = f"chats_doctor_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        monkeypatch.setenv("DATABASE_URL", with_database(pg_url, name))
        checks = results()
        assert checks["pgvector"].status == doctor.FAIL and "CREATE EXTENSION vector" in checks["pgvector"].fix
        assert checks["migrations"].status == doctor.FAIL and checks["migrations"].fix == "chats sync (applies them)"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
