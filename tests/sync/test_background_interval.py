"""The hook's background sync reads ``sync_interval`` as ``chats config show`` does (issue 16, item 6).

Each test runs the real hook as a fresh process, as Claude Code does.
"""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from claude_chats.cli import main
from tests.support.hooks import wait_for


def transcript(folder, session="bg-interval"):
    path = folder / f"{session}.jsonl"
    rows = [{"type": "user", "uuid": f"{session}-u{i}", "sessionId": session, "cwd": "/work/proj",
             "timestamp": f"2026-01-01T00:00:0{i}.000Z", "message": {"role": "user", "content": f"turn {i}"}}
            for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run_hook(path, interval, home):
    env = {**os.environ, "CLAUDE_CHATS_SYNC_INTERVAL": interval,
           "CLAUDE_CHATS_PROVIDER": "no-such-provider"}   # the background sync fails fast and logs why
    payload = json.dumps({"session_id": "bg-interval", "transcript_path": str(path), "hook_event_name": "Stop"})
    proc = subprocess.run([sys.executable, "-m", "claude_chats.hook"], input=payload.encode(), env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == b""
    return home / "sync.started"


@pytest.mark.parametrize("interval", ["5m", "1h", "300"])
def test_the_documented_duration_forms_start_a_background_sync(tmp_path, isolated_home, monkeypatch, interval):
    monkeypatch.setenv("CLAUDE_CHATS_SYNC_INTERVAL", interval)
    shown = CliRunner().invoke(main, ["config", "show", "--json"], catch_exceptions=False)
    rows = {row["key"]: row["value"] for row in json.loads(shown.output)["settings"]}
    assert rows["sync_interval"] > 0                      # what the person is told...
    stamp = run_hook(transcript(tmp_path), interval, isolated_home)
    assert stamp.exists(), f"CLAUDE_CHATS_SYNC_INTERVAL={interval} turned the background sync off"
    log = isolated_home / "logs" / "sync.log"             # ...is what the hook does: a sync ran
    assert wait_for(log)
    assert "no-such-provider" in log.read_text()


def test_an_unreadable_interval_is_logged_not_silently_off(tmp_path, isolated_home):
    stamp = run_hook(transcript(tmp_path), "soon", isolated_home)
    assert not stamp.exists()
    entries = [json.loads(line) for line in (isolated_home / "logs" / "hook.log").read_text().splitlines()]
    assert "CLAUDE_CHATS_SYNC_INTERVAL" in entries[-1]["error"] and "soon" in entries[-1]["error"]
