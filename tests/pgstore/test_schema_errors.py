"""``chats sync`` into a database where claude-chats cannot create its tables (issue 16, item 9).

Another tool's ``messages`` table, or a role without CREATE on the schema: a one-line
error saying why and what to do, the messages still pending in the journal, and
``chats doctor`` advising that fix rather than "chats sync" again.
"""

import json
import uuid

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from claude_chats.cli import main


def chats(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result, result.output   # stdout and stderr, as the person sees them


@pytest.fixture
def pending(tmp_path):
    rows = [{"type": "user", "uuid": f"u-{i}", "sessionId": "s-schema", "cwd": "/work/proj",
             "timestamp": "2026-01-01T10:00:00.000Z", "message": {"role": "user", "content": f"turn {i}"}}
            for i in range(3)]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert chats("import", str(path))[0].exit_code == 0


def one_line_error(result, out):
    assert result.exit_code == 1, out
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in out, out
    return lines[0]


def still_pending():
    status = json.loads(chats("status", "--json", "--offline")[0].output)
    return status["journal"]["pending"]


def doctor_migrations():
    checks = {c["name"]: c for c in json.loads(chats("doctor", "--json")[0].output)}
    return checks["migrations"]


def test_another_tools_messages_table(pending, pg_db_url, monkeypatch):
    with psycopg.connect(pg_db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE messages (id serial PRIMARY KEY, body text)")
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    line = one_line_error(*chats("sync"))
    assert '"messages" already exists' in line and "database of its own" in line, line
    assert still_pending() == 3
    check = doctor_migrations()
    assert check["status"] == "fail" and "database of its own" in check["fix"], check


@pytest.fixture
def role_without_create(pg_db_url):
    """A login role that may connect and use the schema, not create in it (PostgreSQL 15's default)."""
    name = f"chats_nocreate_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_db_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN")
        conn.execute(f"GRANT CONNECT ON DATABASE {conninfo_to_dict(pg_db_url)['dbname']} TO {name}")
        conn.execute(f"GRANT USAGE ON SCHEMA public TO {name}")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    yield make_conninfo(**{**conninfo_to_dict(pg_db_url), "user": name})
    with psycopg.connect(pg_db_url, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {name}")
        conn.execute(f"REVOKE ALL ON DATABASE {conninfo_to_dict(pg_db_url)['dbname']} FROM {name}")
        conn.execute(f"DROP ROLE {name}")


def test_a_role_that_may_not_create_tables(pending, role_without_create, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", role_without_create)
    line = one_line_error(*chats("sync"))
    assert "permission denied" in line and "schema owner" in line, line
    assert still_pending() == 3
    check = doctor_migrations()
    assert check["status"] == "fail" and "schema owner" in check["fix"] and check["fix"] != "chats sync (applies them)"
