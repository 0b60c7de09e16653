"""Database URL safety: TLS for remote hosts, passwords never printed."""

import pytest

from claude_chats.errors import InsecureConnectionError, PostgresUnavailable
from claude_chats.pgstore import connect as pg
from claude_chats.pgstore import url as dburl

SECRET = "s3cr3t-pa55"


@pytest.mark.parametrize("url", [
    f"postgresql://chats:{SECRET}@db.example.com:5432/chats",
    f"postgres://chats:{SECRET}@db.example.com/chats?sslmode=prefer",
    f"host=db.example.com user=chats password={SECRET} dbname=chats",
    f"postgresql://chats:{SECRET}@10.0.0.5/chats?sslmode=disable",
])
def test_remote_without_tls_is_refused_with_a_fix(url):
    with pytest.raises(InsecureConnectionError) as err:
        dburl.check(url, environ={})
    message = str(err.value)
    assert "sslmode=verify-full" in message and "allow_insecure_remote" in message
    assert SECRET not in message


@pytest.mark.parametrize("url", [
    f"postgresql://chats:{SECRET}@db.example.com/chats?sslmode=require",
    f"postgresql://chats:{SECRET}@db.example.com/chats?sslmode=verify-full",
    "host=db.example.com sslmode=verify-ca dbname=chats",
    f"postgresql://chats:{SECRET}@localhost:5433/chats",
    "postgresql://chats@127.0.0.1/chats",
    "postgresql://chats@[::1]/chats",
    "postgresql:///chats?host=/var/run/postgresql",
    "postgresql:///chats",
])
def test_tls_or_local_is_accepted(url):
    dburl.check(url, environ={})


def test_pgsslmode_and_pghost_from_the_environment_count():
    dburl.check("postgresql:///chats", environ={"PGHOST": "db.example.com", "PGSSLMODE": "require"})
    with pytest.raises(InsecureConnectionError):
        dburl.check("postgresql:///chats", environ={"PGHOST": "db.example.com"})


def test_opt_out_allows_insecure_remote():
    dburl.check("postgresql://u@db.example.com/chats", allow_insecure_remote=True, environ={})


def test_multi_host_needs_tls_if_any_is_remote():
    with pytest.raises(InsecureConnectionError):
        dburl.check("postgresql://u@localhost,db.example.com/chats", environ={})


@pytest.mark.parametrize("url, expected", [
    (f"postgresql://chats:{SECRET}@db:5432/chats?sslmode=require",
     "postgresql://chats:***@db:5432/chats?sslmode=require"),
    ("postgresql://chats@db/chats", "postgresql://chats@db/chats"),
    (f"postgresql://db/chats?password={SECRET}&sslmode=require",
     "postgresql://db/chats?password=***&sslmode=require"),
    (f"host=db password={SECRET} dbname=x", "host=db password=*** dbname=x"),
    (f"host=db password='{SECRET} x' dbname=x", "host=db password=*** dbname=x"),
    (None, None),
])
def test_mask(url, expected):
    assert dburl.mask(url) == expected


def test_unreachable_server_is_reported_without_the_password():
    url = f"postgresql://chats:{SECRET}@127.0.0.1:9/chats"   # discard port: nothing listens
    with pytest.raises(PostgresUnavailable) as err:
        pg.connect(url, connect_timeout=2)
    assert "chats:***@127.0.0.1:9" in str(err.value)
    assert SECRET not in str(err.value)


def test_not_configured_says_how_to_configure():
    with pytest.raises(PostgresUnavailable, match="DATABASE_URL"):
        pg.connect(None)
