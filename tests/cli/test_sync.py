"""``chats sync`` through the CLI: JSON summary, TLS refusal, the lock."""

import json

import pytest

from claude_chats import models
from claude_chats.localstore.journal import Journal
from claude_chats.sync.lock import SyncLock
from tests.support import lines
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder


@pytest.fixture
def test_provider(monkeypatch):
    """The test embedder, registered under its name (the provider registry's public API)."""
    monkeypatch.setitem(models.PROVIDERS, HashEmbedder.name, HashEmbedder)
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", HashEmbedder.name)


@pytest.fixture
def imported_session(tmp_path):
    """The journal at the default path holding the 6 messages of cli-session, none synced."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(6, session="cli-session")))
    with Journal.open() as journal:
        journal.import_files([str(path)])


def test_sync_json_summary(imported_session, test_provider, pg_db_url, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    result = chats("sync", "--json", "--batch-size", "4")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["ok"] and summary["pushed"] == 6 and summary["batches"] == 2
    again = json.loads(chats("sync", "--json").output)
    assert again["pushed"] == 0 and again["pending_before"] == 0


def test_sync_text_summary_without_postgres(imported_session, test_provider):
    result = chats("sync")
    assert result.exit_code == 0
    assert result.output.splitlines()[0].startswith("embedded 6 messages (")
    assert "journal only: 6 messages to push once Postgres is configured" in result.output
    assert "still pending" not in result.output   # a journal alone waits for nothing


def test_remote_url_without_tls_is_refused(imported_session, test_provider, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://chats:hunter2@db.example.com/chats")
    result = chats("sync")
    assert result.exit_code == 1
    assert "sslmode=verify-full" in result.output and "hunter2" not in result.output


def test_postgres_down_exits_1_and_says_so(imported_session, test_provider, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://chats:hunter2@localhost:9/chats")
    result = chats("sync", "--json")
    assert result.exit_code == 1
    summary = json.loads(result.output)
    assert summary["postgres"] == "unreachable" and summary["pending_after"] == 6
    assert "hunter2" not in result.output


def test_second_sync_exits_at_once(imported_session, test_provider):
    with SyncLock():
        result = chats("sync", "--json")
    assert result.exit_code == 0
    assert "another `chats sync` is running" in json.loads(result.output)["skipped"]
