"""Another machine sharing the Postgres: its role, its tombstones, and ``chats`` run as a process.

``hostile_role(url)`` is a login role with the run-time grants RELIABILITY.md documents (SELECT,
INSERT, UPDATE, DELETE on the tables, no ownership): what any machine holding the shared URL may
do. ``tombstone(url, kind, target, age=..., machine=...)`` is its plain INSERT into ``purges``.
``without_date_check(url)`` drops Postgres' own check on a tombstone's date (sql/0006), as its owner
may. ``chats_run(*args)`` runs ``chats`` as a fresh process (the environment as the test set it).
``session_file(session, texts, cwd, ts)`` writes a Claude Code transcript into the projects folder.
"""

import contextlib
import json
import os
import subprocess
import uuid as uuidlib

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from claude_chats import paths
from tests.support import lines
from tests.support.hooks import CHATS

RUNTIME_GRANTS = """
GRANT CONNECT ON DATABASE {db} TO {role};
GRANT USAGE ON SCHEMA public TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role};
"""


@contextlib.contextmanager
def hostile_role(url):
    """The URL of a new run-time role on ``url``'s database (dropped afterwards)."""
    role = f"chats_other_{uuidlib.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
        admin.execute(RUNTIME_GRANTS.format(db=conninfo_to_dict(url)["dbname"], role=role))
    try:
        yield make_conninfo(url, user=role)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def tombstone(url, kind, target, ahead="0 seconds", machine="other-machine"):
    """Another machine's tombstone: one INSERT into ``purges``, dated ``now() + ahead``."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO purges (kind, target, created_at, machine) "
                     "VALUES (%s, %s, now() + %s::interval, %s)", (kind, target, ahead, machine))


def without_date_check(url):
    """Drop Postgres' own check on a tombstone's date (sql/0006), as an owner may, or as a database
    holds rows dated ahead from before it: what every machine's sync must then refuse itself."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE purges DROP CONSTRAINT IF EXISTS purges_not_ahead")


def chats_run(*args, input=None):
    """``chats ARGS`` as a fresh process: (exit code, stdout, stderr) as text."""
    proc = subprocess.run(CHATS + [str(a) for a in args], capture_output=True, timeout=300, input=input,
                          text=True)
    return proc.returncode, proc.stdout, proc.stderr


def chats_json(*args):
    """``chats ARGS --json`` as a fresh process that must succeed: its JSON."""
    code, out, err = chats_run(*args, "--json")
    assert code == 0, (out, err)
    return json.loads(out)


def session_id(name):
    """A session id of the shape Claude Code writes (a UUID), stable for ``name``."""
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_OID, name))


def session_file(session, texts, cwd, ts="2026-01-01T00:00:00.000Z"):
    """The transcript of ``session`` in Claude Code's projects folder, ``texts`` appended as user lines."""
    folder = os.path.join(paths.claude_projects_dir(), cwd.replace("/", "-"))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{session}.jsonl")
    with open(path, "ab") as fh:
        fh.write(lines.encode(*[lines.user(t, session=session, cwd=cwd, ts=ts) for t in texts]))
    return path
