"""``chats sync`` with Postgres configured and no embedding model says the model is missing (issue 21, item 8).

It said "journal only: ... once Postgres is configured" and "set DATABASE_URL", with the database set
and reachable: the missing model was only in the error line after. Through ``chats`` as a process.
"""

import json
import os
import subprocess

from tests.support import lines
from tests.support.hooks import CHATS


def sync(env, *args):
    return subprocess.run([*CHATS, "sync", *args], capture_output=True, text=True, env=env, timeout=300)


def test_sync_with_a_database_and_no_model_names_the_model(pg_db_url, tmp_path):
    transcript = tmp_path / "a.jsonl"
    transcript.write_bytes(lines.encode(lines.user("hello there", session="s1")))
    subprocess.run([*CHATS, "import", str(transcript)], check=True, capture_output=True, timeout=120)
    env = {**os.environ, "DATABASE_URL": pg_db_url}
    proc = sync(env)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in said, said
    assert "not configured" not in said and "DATABASE_URL" not in said, said
    assert "no embedding model" in said and "chats models setup" in said, said
    report = json.loads(sync(env, "--json").stdout)
    assert report["postgres"] == "ok" and report["pending_after"] == 1, report
    assert any("chats models setup" in error for error in report["errors"]), report


def test_sync_without_a_database_and_no_model_says_both(tmp_path):
    transcript = tmp_path / "a.jsonl"
    transcript.write_bytes(lines.encode(lines.user("hello there", session="s1")))
    subprocess.run([*CHATS, "import", str(transcript)], check=True, capture_output=True, timeout=120)
    report = json.loads(sync(dict(os.environ), "--json").stdout)
    assert report["postgres"] == "not configured"
    assert any("no embedding model" in e and "chats models setup" in e for e in report["errors"]), report
