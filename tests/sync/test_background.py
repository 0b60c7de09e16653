"""The hook's background start: rate-limited, lock-aware, detached, cheap to import."""

import json
import os
import subprocess
import sys
import time

import pytest

from claude_chats import paths
from claude_chats.localstore.journal import Journal
from claude_chats.sync import background
from claude_chats.sync.lock import SyncLock
from tests.support import lines


@pytest.fixture
def pending_journal(tmp_path):
    """The journal at the default path, holding a conversation not yet synced."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(lines.encode(*lines.conversation(2, session="bg")))
    with Journal.open() as j:
        j.import_files([str(path)])
        yield j


def sync_log():
    return os.path.join(paths.log_dir(), "sync.log")


def wait_for(path, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path):
            return True
        time.sleep(0.1)
    return False


def test_starts_a_detached_sync_then_waits_for_the_interval(pending_journal, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "no-such-provider")  # the child fails fast and logs it
    assert background.maybe_start(pending_journal.conn, interval=60) is True
    assert wait_for(sync_log())
    with open(sync_log(), encoding="utf-8") as fh:
        entry = json.loads(fh.readline())
    assert entry["ok"] is False and "no-such-provider" in entry["errors"][0]
    assert background.maybe_start(pending_journal.conn, interval=60) is False          # rate-limited
    assert background.maybe_start(pending_journal.conn, interval=60, now=time.time() + 61) is True


def test_interval_zero_turns_it_off(pending_journal):
    assert background.maybe_start(pending_journal.conn, interval=0) is False
    assert background.maybe_start(pending_journal.conn) is False          # conftest sets CLAUDE_CHATS_SYNC_INTERVAL=0
    assert not os.path.exists(background.stamp_path())


def test_not_started_while_a_sync_runs(pending_journal):
    with SyncLock():
        assert background.maybe_start(pending_journal.conn, interval=1) is False


def test_not_started_without_pending_messages(pending_journal):
    pending_journal.mark_synced([r["id"] for r in pending_journal.pending(limit=100)])
    assert background.maybe_start(pending_journal.conn, interval=1) is False


def test_command_is_the_module_job():
    assert background.command()[1:] == ["-m", "claude_chats.sync", "--background"]


def test_import_is_stdlib_only():
    code = ("import sys; import claude_chats.sync.background; "
            "heavy = [m for m in ('psycopg', 'numpy', 'pgvector', 'rich', 'click', 'subprocess', "
            "'claude_chats.models', 'claude_chats.config') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
