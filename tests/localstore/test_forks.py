"""Forks (issue 12 defect 3): a session whose transcript begins with a copy of another's lines.

``claude --resume X --fork-session`` and ``/fork`` write the parent's lines into
the new session's file with the same uuids and the new ``sessionId``. Each
session must read whole, search must find the copied text once, and re-reading
either file (in either order) must store nothing twice: in the journal and, after
a sync, in Postgres.
"""

import itertools
import time

import pytest

from claude_chats import config
from claude_chats.localstore import writer
from claude_chats.localstore.journal import Journal
from claude_chats.localstore.search import LocalSearch
from claude_chats.pgstore.search import open_search
from claude_chats.search.searcher import Searcher
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.fakes import HashEmbedder

PARENT, FORK = "parent-session", "fork-session"


def parent_lines():
    return [lines.user("how do I rotate the kumquat logs", session=PARENT, uid="u-1"),
            lines.assistant("use logrotate with a kumquat stanza", session=PARENT, uid="a-1"),
            lines.user("and keep seven persimmon days", session=PARENT, uid="u-2"),
            lines.assistant("set rotate 7 in the persimmon stanza", session=PARENT, uid="a-2")]


def fork_lines():
    """What Claude Code writes for the fork: the parent's lines, same uuids, the fork's sessionId; then its own."""
    copied = [{**line, "sessionId": FORK} for line in parent_lines()]
    return copied + [lines.user("now the quince rotation instead", session=FORK, uid="u-3"),
                     lines.assistant("a quince stanza, daily", session=FORK, uid="a-3")]


def write(tmp_path):
    folder = tmp_path / "projects" / "-work-proj"
    folder.mkdir(parents=True)
    parent, fork = folder / f"{PARENT}.jsonl", folder / f"{FORK}.jsonl"
    parent.write_bytes(lines.encode(*parent_lines()))
    fork.write_bytes(lines.encode(*fork_lines()))
    return str(parent), str(fork)


def texts(journal, session):
    return [m["content"] for m in journal.messages(session)]


def user_hits(searcher, query):
    result = searcher.search(query, mode="fulltext", per_session=0, limit=20, max_chars=None)
    return [(h["session_id"], h["text"]) for h in result["hits"] if h["role"] == "user"]


@pytest.mark.parametrize("order", ["parent first", "fork first"])
def test_a_fork_reads_whole_and_its_copy_is_found_once(tmp_path, order):
    parent, fork = write(tmp_path)
    with Journal.open() as journal:
        files = [parent, fork] if order == "parent first" else [fork, parent]
        for path in files:                                  # as two hook runs would
            journal.import_files([path])
        assert texts(journal, PARENT) == [l["message"]["content"] if isinstance(l["message"]["content"], str)
                                          else l["message"]["content"][0]["text"] for l in parent_lines()]
        assert len(texts(journal, FORK)) == 6 and texts(journal, FORK)[:4] == texts(journal, PARENT)
        again = journal.import_files(files)
        journal.conn.execute("UPDATE transcripts SET offset = 0")   # a full re-read stores nothing either
        reread = journal.import_files(list(reversed(files)))
        assert again.messages == reread.messages == 0 and reread.duplicates == 10
        searcher = Searcher(LocalSearch(journal))
        found = [text for _, text in user_hits(searcher, "persimmon days")]
        assert found.count("and keep seven persimmon days") == 1 and found.count("how do I rotate the kumquat logs") <= 1
        assert (FORK, "now the quince rotation instead") in user_hits(searcher, "quince rotation")


def test_three_sessions_holding_one_line_each_keep_it(tmp_path):
    """One uuid in three session files (issue 16 item 14): stored once per session, found once."""
    folder = tmp_path / "p"
    folder.mkdir()
    paths = []
    for session in ("s-a", "s-b", "s-c"):
        path = folder / f"{session}.jsonl"
        path.write_bytes(lines.encode(lines.user("the shared tangerine line", session=session, uid="u-shared")))
        paths.append(str(path))
    with Journal.open() as journal:
        stats = journal.import_files(paths)
        assert (stats.messages, stats.duplicates) == (3, 0)
        assert all(texts(journal, s) == ["the shared tangerine line"] for s in ("s-a", "s-b", "s-c"))
        assert [text for _, text in user_hits(Searcher(LocalSearch(journal)), "tangerine")] == \
            ["the shared tangerine line"]


def test_a_fork_in_postgres_reads_whole_and_is_found_once(tmp_path, pg_db_url):
    parent, fork = write(tmp_path)
    with Journal.open() as journal:
        journal.import_files([parent, fork])
        report = run_sync(config.load({"database_url": pg_db_url}), journal=journal, provider=HashEmbedder(),
                          lock=False)
        assert report.ok and report.pushed == 10, report.errors
        assert report.embedded == 6          # the fork's 4 copies are not embedded: they are not searched
        remote = open_search(pg_db_url)
        searcher = Searcher(None, type("Link", (), {"backend": lambda self: remote})())
        try:
            page = searcher.conversation(FORK)
            assert [m["text"] for m in page["messages"]] == texts(journal, FORK)
            for mode, query in itertools.product(("fulltext", "hybrid"), ("persimmon days",)):
                result = searcher.search(query, mode=mode, per_session=0, limit=20, max_chars=None)
                users = [h["text"] for h in result["hits"] if h["role"] == "user"]
                assert users.count("and keep seven persimmon days") == 1, (mode, users)
        finally:
            remote.close()


def test_a_watched_transcript_not_written_yet_is_not_forgotten(tmp_path):
    """/fork's SessionStart names a transcript Claude Code writes a moment later: a hook run in between
    (the next prompt's, under load) must keep watching it; one missing for WATCH_DAYS is forgotten."""
    from claude_chats.localstore import db

    conn = db.connect(str(tmp_path / "journal.db"))
    fork = tmp_path / "sess-bg.jsonl"
    writer.watch(conn, str(fork), "sess-bg")
    writer.ingest_watched(conn, writer.IngestStats())
    fork.write_bytes(lines.encode(lines.user("in the fork", session="sess-bg")))
    writer.ingest_watched(conn, writer.IngestStats())
    assert conn.execute("SELECT content FROM messages").fetchall() == [("in the fork",)]
    writer.watch(conn, str(tmp_path / "never.jsonl"), "sess-never")
    writer.ingest_watched(conn, writer.IngestStats())
    assert len(conn.execute("SELECT path FROM watched_transcripts").fetchall()) == 2
    writer.ingest_watched(conn, writer.IngestStats(), now=time.time() + 3 * 86400)
    assert conn.execute("SELECT path FROM watched_transcripts").fetchall() == []
