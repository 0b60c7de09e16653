"""Reading what stays on disk: files byte by byte, and the embedded Postgres' data directory.

``holding(roots, needles)``: ``{file: [label of each needle it holds]}`` under files or folders
``roots`` (``needles``: ``{bytes: label}``). ``pg_on_disk`` (fixture): ``(database url, data
directory)`` of the test server with ``wal_recycle = off`` for the test, as a person who needs the
guarantee on disk sets it (RELIABILITY.md); skipped where the data directory cannot be read.
"""

import os
import pathlib

import psycopg
import pytest


def files_under(*roots):
    for root in roots:
        root = pathlib.Path(root)
        if root.is_file():
            yield root
        elif root.is_dir():
            yield from (p for p in root.rglob("*") if p.is_file())


def holding(roots, needles):
    """{file: [labels of the needles it holds]}."""
    hits = {}
    for path in files_under(*roots):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        held = sorted(label for needle, label in needles.items() if needle in data)
        if held:
            hits[str(path)] = held
    return hits


@pytest.fixture
def pg_on_disk(pg_url, pg_db_url):
    """(database url, data directory) of the embedded server, with ``wal_recycle = off`` for this test."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        try:
            data = conn.execute("SHOW data_directory").fetchone()[0]
        except psycopg.Error:
            pytest.skip("the test Postgres does not say where its data directory is")
        if not os.access(data, os.R_OK | os.X_OK):
            pytest.skip(f"the test Postgres data directory {data} is not readable here")
        try:
            conn.execute("ALTER SYSTEM SET wal_recycle = off")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("the test Postgres' role may not set wal_recycle (ALTER SYSTEM)")
        conn.execute("SELECT pg_reload_conf()")
    try:
        yield pg_db_url, data
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM RESET wal_recycle")
            conn.execute("SELECT pg_reload_conf()")
