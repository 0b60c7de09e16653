"""PostgreSQL migrations: numbered ``.sql`` files applied in order, recorded in a table.

Each migration runs in one transaction together with its record, under an
advisory lock, so machines migrating the same database at once apply each
file exactly once. The files are ``sql/`` beside this module (shipped in the wheel).
"""

import pathlib
import re

TABLE = "chats_migrations"
LOCK_KEY = 0x63686174  # pg_advisory_xact_lock key: "chat"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
TABLES = ("conversations", "messages", "spaces", "purges", "raw_lines")   # what the migrations create


def sql_dir():
    """The folder holding the migrations."""
    return pathlib.Path(__file__).resolve().parent / "sql"


def available():
    """``[(name, sql)]`` of every migration, ordered by number."""
    folder = sql_dir()
    names = sorted(p.name for p in folder.iterdir() if _NAME.match(p.name))
    return [(name, folder.joinpath(name).read_text(encoding="utf-8")) for name in names]


def applied(conn):
    """Names of the migrations already applied to ``conn``'s database."""
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (TABLE,)).fetchone()[0]
    if not exists:
        return set()
    return {row[0] for row in conn.execute(f"SELECT name FROM {TABLE}")}


def migrate(conn):
    """Apply the pending migrations; returns the names applied now."""
    pending = [(n, s) for n, s in available() if n not in applied(conn)]
    done = []
    for name, sql in pending:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
            conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} "
                         "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            if conn.execute(f"SELECT 1 FROM {TABLE} WHERE name = %s", (name,)).fetchone():
                continue  # another machine applied it while we waited for the lock
            conn.execute(sql)
            conn.execute(f"INSERT INTO {TABLE} (name) VALUES (%s)", (name,))
            done.append(name)
    return done


def blocker(conn):
    """Why the pending migrations cannot be applied on ``conn`` and what to do, or None.

    Another tool's table under one of claude-chats' names (a database shared with it), or
    a role that may not create tables in the schema (PostgreSQL 15's default for the
    ``public`` schema of a role that does not own it).
    """
    if not applied(conn):
        taken = [t for t in TABLES if conn.execute("SELECT to_regclass(%s) IS NOT NULL", (t,)).fetchone()[0]]
        if taken:
            return (f"the database already has a table {', '.join(taken)} that claude-chats did not create "
                    "(another tool's): give claude-chats a database of its own (CREATE DATABASE chats) "
                    "and point database_url at it")
    user, schema, may_create = conn.execute(
        "SELECT current_user, current_schema(), has_schema_privilege(current_schema(), 'CREATE')").fetchone()
    if not may_create:
        return (f"role {user} may not create tables in schema {schema}: run `chats sync` once as the schema "
                f"owner (it creates the tables; this role then needs only SELECT, INSERT, UPDATE, DELETE), "
                f"or GRANT CREATE ON SCHEMA {schema} TO {user}")
    return None
