"""``chats ui`` over Postgres: the pages read the canonical store when it answers, the journal when it is lost."""

import re

import pytest
from starlette.testclient import TestClient

from claude_chats.localstore.search import LocalSearch
from claude_chats.pgstore.search import PgLink
from claude_chats.search.searcher import Searcher
from claude_chats.ui import guard
from claude_chats.ui.app import create_app
from tests.support.fakes import HashEmbedder

TOKEN, HOST = "pg-token", "127.0.0.1:8765"


def _client(journal, url, retry_after=5.0):
    link = PgLink(url, retry_after=retry_after)
    link.start()
    searcher = Searcher(LocalSearch.open(journal.path), link, HashEmbedder, redact=True, redact_results=True)
    c = TestClient(create_app(searcher, TOKEN, [HOST], journal_path=journal.path, watch=False),
                   base_url=f"http://{HOST}")
    c.cookies.set(guard.COOKIE, TOKEN)
    return c, searcher


@pytest.fixture
def pg_client(pg_synced_journal, pg_db_url):
    c, searcher = _client(pg_synced_journal, pg_db_url)
    yield c
    searcher.close()


def test_search_and_pages_are_answered_by_postgres(pg_client):
    for mode in ("fulltext", "hybrid", "semantic"):
        r = pg_client.get(f"/search?q=port+5432+docker&mode={mode}&fragment=1")
        assert r.status_code == 200
        assert '<span class="source">postgres</span>' in r.text, mode
        assert "s-docker" in r.text, mode
    session = pg_client.get("/session/s-migrate?at=1").text
    assert '<span class="source">postgres</span>' in session
    assert re.findall(r'id="seq-(\d+)"', session) == ["0", "1", "2", "3"]
    listing = pg_client.get("/sessions").text
    assert '<span class="source">postgres</span>' in listing and "s-long" in listing
    subagents = pg_client.get("/session/s-migrate").text
    assert "s-migrate:agent-a1" in subagents


def test_a_lost_postgres_is_said_and_the_journal_answers(pg_synced_journal):
    c, searcher = _client(pg_synced_journal, "postgresql://nobody@127.0.0.1:9/none?connect_timeout=1", 60)
    try:
        r = c.get("/search?q=docker&mode=fulltext&fragment=1")
        assert '<span class="source">journal</span>' in r.text
        assert "Postgres unreachable" in r.text
        assert "s-docker" in r.text
    finally:
        searcher.close()
