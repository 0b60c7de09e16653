"""`chats status` and `chats doctor` over a real journal, a real Postgres and the real test model."""

import json
import os

import pytest
from click.testing import CliRunner

from claude_chats import config, paths, status
from claude_chats.cli import main
from claude_chats.localstore.journal import Journal
from claude_chats.sync.runner import run_sync
from tests import lines
from tests.fixtures_pg import HashEmbedder


def chats(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


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
    assert report["journal"]["exists"] is False and report["postgres"] == {"checked": False}


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
