"""A journal that is not a regular file is refused before SQLite opens it (issue 21, item 8).

journal.db as a FIFO hung ``chats status --offline`` (and every command, and the hook) in SQLite's
open. Now the path, its WAL and its shared-memory file are checked with ``stat`` first: the commands
say so in one line, ``status`` in its journal section, and the hook exits 0 at once and logs it.
"""

import os
import subprocess

import pytest

from claude_chats import paths
from tests.support import lines
from tests.support.hooks import CHATS, hook_event, hook_log

PLANTS = {"journal.db a FIFO": ("", os.mkfifo, "is a FIFO"),
          "journal.db a folder": ("", os.mkdir, "is a folder"),
          "its WAL a FIFO": ("-wal", os.mkfifo, "-wal is a FIFO")}


@pytest.fixture(params=list(PLANTS))
def planted(request):
    suffix, make, said = PLANTS[request.param]
    path = paths.journal_path()
    paths.ensure_private_dir(os.path.dirname(path))
    if suffix:
        subprocess.run([*CHATS, "sessions"], check=True, capture_output=True, timeout=120)   # a real journal
    make(path + suffix)
    return said


def run(*args):
    return subprocess.run([*CHATS, *args], capture_output=True, text=True, timeout=120)


def test_status_offline_says_the_journal_is_not_a_file(planted):
    proc = run("status", "--offline")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-1500:]
    said = [line for line in proc.stdout.splitlines() if "error:" in line and planted in line]
    assert said and paths.journal_path() in said[0], proc.stdout


@pytest.mark.parametrize("args", [["sessions"], ["search", "x", "--local"], ["sync"], ["import"]])
def test_commands_give_one_line(planted, args):
    proc = run(*args)
    out = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-1500:])
    assert len([line for line in out if planted in line]) == 1, out


def test_the_hook_exits_0_at_once_and_logs(planted, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    transcript.write_bytes(lines.encode(lines.user("hello", session="s1")))
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        out = hook_event(transcript, event, session="s1", prompt="hello")   # exit 0, within its timeout
        assert out == b"" or out.startswith(b"{"), out
    assert any(planted in entry.get("error", "") for entry in hook_log()), hook_log()
