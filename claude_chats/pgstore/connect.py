"""Connecting to the canonical Postgres: URL safety, short timeout, pgvector adapter."""

import psycopg
from pgvector.psycopg import register_vector

from ..errors import PostgresError, PostgresUnavailable
from . import url as dburl

CONNECT_TIMEOUT = 5  # seconds: the hook's background sync must give up quickly when offline


def connect(url, allow_insecure_remote=False, connect_timeout=CONNECT_TIMEOUT, register=True):
    """An autocommit psycopg connection to ``url`` with the vector type registered.

    Raises ``InsecureConnectionError`` for a remote host without TLS,
    ``PostgresUnavailable`` when the server cannot be reached. Messages carry
    the masked URL, never the password.
    """
    if not url:
        raise PostgresUnavailable(
            "Postgres is not configured: set DATABASE_URL (or database_url in the config file)")
    dburl.check(url, allow_insecure_remote)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout,
                               application_name="claude-chats")
    except psycopg.OperationalError as exc:
        raise PostgresUnavailable(f"cannot reach Postgres at {dburl.mask(url)}: "
                                  f"{_first_line(dburl.hide_password(str(exc), url))}") from None
    if register:
        register_vector_type(conn, url)
    return conn


def register_vector_type(conn, url=""):
    """Register pgvector's types on ``conn`` (once per connection, the pgvector-python way)."""
    try:
        register_vector(conn)
    except psycopg.ProgrammingError:
        conn.close()
        raise PostgresError(f"the vector extension is not installed in {dburl.mask(url)}: "
                            "run `CREATE EXTENSION vector` as a superuser (pgvector >= 0.5)") from None


def _first_line(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "connection failed"
