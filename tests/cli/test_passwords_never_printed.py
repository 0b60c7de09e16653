"""A database password with ``#``, ``?``, ``/``, ``[`` or ``]`` is never printed (issue 16, item 2).

Every place a person sees the database URL: ``config set``, ``config show``, ``status``,
``doctor``, a failing ``chats sync`` (text and ``--json``), and the ``sync.log`` of the
background sync the hook starts. Postgres is down (a local port nothing listens on) and the
model is missing, so every error path that names the URL runs.
"""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from claude_chats import paths
from claude_chats.cli import main
from tests.support.hooks import wait_for

PASSWORDS = ["Secr#etPw8", "Que?stion8", "Sla/shPw88", "Brack[et]Pw8", "Pct%41Enc8"]


def urls(password):
    quoted = password.replace("\\", "\\\\").replace("'", "\\'")
    return {
        "userinfo": f"postgresql://chats:{password}@127.0.0.1:9/chats?connect_timeout=2",
        "query": f"postgresql://127.0.0.1:9/chats?connect_timeout=2&password={password}",
        "keywords": f"host=127.0.0.1 port=9 dbname=chats connect_timeout=2 password='{quoted}'",
    }


CASES = [(p, form) for p in PASSWORDS for form in ("userinfo", "query", "keywords")]


def leaked(text, password):
    """The password, or a telling piece of it, in ``text``."""
    pieces = {password, password.replace("%41", "A")}
    for sep in "#?/[]%":
        pieces.update(part for part in password.split(sep) if len(part) >= 4)
    return sorted(p for p in pieces if p in text)


def chats(*args, env=None):
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    return result, result.output   # stdout and stderr, as the person sees them


def transcript(folder, session="pw-session"):
    path = folder / f"{session}.jsonl"
    rows = [{"type": "user", "uuid": f"{session}-{i}", "sessionId": session, "cwd": "/work/proj",
             "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": f"turn {i}"}}
            for i in range(2)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def missing_model(monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", "/nowhere/model.gguf")


@pytest.mark.parametrize("password, form", CASES, ids=[f"{form}:{p}" for p, form in CASES])
def test_config_status_doctor_and_sync_never_print_the_password(password, form, missing_model, tmp_path):
    url = urls(password)[form]
    result, out = chats("config", "set", "database_url", url)
    assert result.exit_code == 0, out
    assert not leaked(out, password), out
    chats("import", str(transcript(tmp_path)))
    for args in (["config", "show"], ["config", "show", "--json"], ["status"], ["status", "--json"],
                 ["doctor"], ["doctor", "--json"], ["sync"], ["sync", "--json"]):
        result, out = chats(*args)
        assert "Traceback" not in out and not isinstance(result.exception, (ValueError, IndexError)), (args, out)
        assert not leaked(out, password), (args, out)
    result, out = chats("sync")
    assert result.exit_code == 1 and "error:" in out.lower()       # the failing sync ran and said why


@pytest.mark.parametrize("password", PASSWORDS)
def test_the_background_sync_log_never_holds_the_password(password, tmp_path, isolated_home):
    """The hook (a fresh process) starts the background sync; its ``sync.log`` names the failure, not the password."""
    env = {**os.environ, "DATABASE_URL": urls(password)["userinfo"], "CLAUDE_CHATS_SYNC_INTERVAL": "300",
           "CLAUDE_CHATS_MODEL": "/nowhere/model.gguf"}
    payload = json.dumps({"session_id": "pw-session", "transcript_path": str(transcript(tmp_path)),
                          "hook_event_name": "Stop"})
    proc = subprocess.run([sys.executable, "-m", "claude_chats.hook"], input=payload.encode(), env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0
    log = isolated_home / "logs" / "sync.log"
    assert wait_for(log)
    text = log.read_text()
    assert "Postgres" in text or "TLS" in text, text            # the URL's error path ran
    assert not leaked(text, password), text
    for name in os.listdir(paths.log_dir()):
        assert not leaked((isolated_home / "logs" / name).read_text(errors="replace"), password)
