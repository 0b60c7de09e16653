"""A transcript whose secrets only their JSON keys name (issue 21, item 3), and ``chats`` as a process.

``keyed_transcript(folder)`` writes session ``SESSION``: a tool call whose input holds ``PASSWORD``,
an AWS secret, a number under a secret's name and a token nested 250 levels deep, and a tool
result whose ``toolUseResult.config.password`` is another; the first and last lines hold none.
``leaks(data)`` lists the ``SECRETS`` found in bytes or lines of text. ``run_chats(args, env)`` runs
``chats`` as a fresh process that must succeed (and never print a traceback).
``synced(tmp_path, monkeypatch, url, model)``: that session imported and synced to ``url`` by
``chats`` processes (the sync's JSON report). ``restored_elsewhere(folder)``: ``chats restore SESSION`` on another machine (its HOME and Claude
folder under ``folder``, the same Postgres): the bytes of the files it wrote.
"""

import json
import os
import subprocess

from tests.support import lines
from tests.support.hooks import CHATS
from tests.support.redaction_corpus import fake

PASSWORD = "Zq8!vR2#mK9$wL4x"
AWS_SECRET = fake("aws secret of item 3", 40)
CONFIG_PASSWORD = "cfg-" + fake("config password of item 3", 12)
PIN = 8462917531                                   # a number under a secret's name
DEEP_TOKEN = "ghp_" + fake("deep token of item 3", 36)   # nested past the old 200-level bound
SECRETS = [PASSWORD, AWS_SECRET, CONFIG_PASSWORD, str(PIN), DEEP_TOKEN]
SESSION = "sess-keyed"


def deep(value, levels):
    for _ in range(levels):
        value = {"x": value}
    return value


def keyed_transcript(folder):
    """A session whose tool call and tool result name their secrets only by their keys."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{SESSION}.jsonl"
    call = {"type": "tool_use", "id": "toolu_01", "name": "mcp__db__connect",
            "input": {"host": "db.internal", "password": PASSWORD, "aws_secret_access_key": AWS_SECRET,
                      "db_secret": PIN, "options": deep({"note": DEEP_TOKEN}, 250)}}
    result = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "connected"}
    path.write_bytes(lines.encode(
        lines.user("connect to the database", session=SESSION),
        lines.assistant([call], session=SESSION),
        lines.user([result], session=SESSION, toolUseResult={"config": {"user": "admin", "password": CONFIG_PASSWORD}}),
        lines.assistant("connected, the tables are there", session=SESSION)))
    return path


def run_chats(args, env=None, check=True):
    proc = subprocess.run(CHATS + [str(a) for a in args], capture_output=True, text=True, timeout=600, env=env,
                          stdin=subprocess.DEVNULL)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def leaks(data):
    """The secrets found in ``data`` (bytes, or lines of text)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else "\n".join(data)
    return [s for s in SECRETS if s in text]


def restored_elsewhere(folder):
    """``chats restore SESSION`` from Postgres on another machine (its own HOME and Claude folder in
    ``folder``): the bytes of each file it wrote, the session's first."""
    env = {**os.environ, "CLAUDE_CHATS_HOME": str(folder / "chats-home"), "CLAUDE_CONFIG_DIR": str(folder / "claude")}
    report = json.loads(run_chats(["restore", SESSION, "--json"], env=env).stdout)
    assert report["source"] == "postgres"
    written = [open(f["path"], "rb").read() for f in report["files"]]
    assert written and str(folder / "claude") in report["files"][0]["path"]
    return written


def synced(tmp_path, monkeypatch, database_url, model_path):
    """``keyed_transcript`` in Claude Code's folder, ``chats import`` and ``chats sync`` to ``database_url``
    (both kept in the environment for the test's later commands); the sync's JSON report."""
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(model_path))
    monkeypatch.setenv("DATABASE_URL", database_url)
    path = keyed_transcript(tmp_path / "claude" / "projects" / "-work-proj")
    run_chats(["import", path.parent])
    report = json.loads(run_chats(["sync", "--json"]).stdout)
    assert report["ok"] and report["raw_lines"] == 4, report
    return report
