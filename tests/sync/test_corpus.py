"""Full sync of the ../shared corpus: Postgres and the journal agree message for message."""

import pytest

from claude_chats import config
from claude_chats.localstore.journal import Journal, discover
from claude_chats.pgstore.store import PgStore
from claude_chats.sync.runner import run_sync
from tests.support.fakes import HashEmbedder

pytestmark = pytest.mark.slow


def test_corpus_sync_agrees_and_rerun_changes_nothing(corpus, tmp_path, pg_db_url):
    with Journal.open(str(tmp_path / "journal.db")) as journal:
        journal.import_files(discover([str(corpus)]))
        settings = config.load({"database_url": pg_db_url})
        report = run_sync(settings, journal=journal, provider=HashEmbedder())
        assert report.ok, report.errors
        assert report.pending_after == 0 and report.pushed == journal.counts()["messages"]
        local = [tuple(r) for r in journal.conn.execute(
            "SELECT s.id, m.seq, chats_uuid(m.uuid), m.role, m.kind, chats_text(m.content), "
            "coalesce(s.name, s.agent_name, s.summary, s.slug), s.project_path, s.machine "
            "FROM messages m JOIN session_numbers n ON n.number = m.session JOIN sessions s ON s.id = n.session_id ORDER BY 1, 2")]
        sessions = journal.counts()["sessions"]
        again = run_sync(settings, journal=journal, provider=HashEmbedder())
        assert (again.pushed, again.embedded, again.conversations) == (0, 0, 0)
    with PgStore.open(pg_db_url) as store:
        remote = store.conn.execute(
            "SELECT c.session_id, m.sequence_num, m.message_uuid, m.role, m.kind, m.content, c.name, "
            "c.project_path, c.machine FROM messages m JOIN conversations c ON c.id = m.conversation_id "
            "ORDER BY 1, 2").fetchall()
        counts = store.counts()
    assert remote == local
    assert counts["conversations"] == sessions
    (vectors,) = counts["vectors"].values()
    assert vectors >= report.embedded - report.pushed + report.pushed * 0 and vectors == report.chunks
