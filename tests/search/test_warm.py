"""What a long-lived searcher (the MCP server) loads before its first search: the journal's vector
index only when the journal is what answers. With Postgres answering, the journal is the fallback,
and its index (every vector of the space in memory: gigabytes at a million messages) waits until a
search falls back to it (issue 22: the MCP server at 5.3 GB although Postgres answered)."""

from claude_chats.localstore.search import LocalSearch
from claude_chats.pgstore.search import PgLink
from claude_chats.search.searcher import Searcher
from tests.support.fakes import HashEmbedder, Proxy
from tests.support.journals import build_journal, sync_corpus


class Watched(LocalSearch):
    """The journal's search, recording which spaces' indexes were warmed."""

    def __init__(self, journal):
        super().__init__(journal)
        self.warmed = []

    def warm(self, key):
        self.warmed.append(key)
        super().warm(key)


def searcher(journal, url):
    link = PgLink(url, retry_after=0.2)
    link.start()
    return Searcher(Watched.open(journal.path), link, HashEmbedder)


def test_the_journal_index_is_not_loaded_while_postgres_answers(tmp_path, pg_db_url):
    journal = build_journal(tmp_path)
    sync_corpus(journal, HashEmbedder(), pg_db_url)
    s = searcher(journal, pg_db_url)
    s.warm()
    assert s.local.warmed == []
    result = s.search("port 5432 already in use")
    assert result["source"] == "postgres" and result["hits"]
    assert s.local.warmed == []
    s.close()


def test_the_journal_index_is_loaded_when_postgres_is_down(tmp_path, pg_db_url):
    journal = build_journal(tmp_path)
    sync_corpus(journal, HashEmbedder(), pg_db_url)
    proxy = Proxy(pg_db_url).start()
    proxy.stop()
    s = searcher(journal, proxy.url)
    s.warm()
    assert s.local.warmed == [HashEmbedder().space.key]
    result = s.search("port 5432 already in use")
    assert result["source"] == "local" and result["hits"]
    s.close()
