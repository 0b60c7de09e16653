"""`chats purge` on a real journal (FTS, sqlite-vec vectors, file bytes) and a real Postgres, queued path included."""

import json
import os
import struct
import time

import pytest

from claude_chats import config, paths, purge
from claude_chats.localstore import erase, vectors
from claude_chats.localstore.journal import Journal
from claude_chats.pgstore.store import PgStore
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.cli import chats
from tests.support.fakes import HashEmbedder
from tests.support.journals import fulltext

SECRET = "zanzibarquokka"          # one token: FTS keeps it whole
DOWN_URL = "postgresql://me:pw@127.0.0.1:1/none?connect_timeout=2"


def transcript(session, texts, cwd, ts="2026-01-01T00:00:00.000Z", folder=None, **extra):
    folder = folder or os.path.join(paths.claude_projects_dir(), cwd.strip("/").replace("/", "-"))
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{session}.jsonl")
    objs = [lines.user(t, session=session, cwd=cwd, ts=ts, **extra) for t in texts]
    with open(path, "ab") as fh:
        fh.write(lines.encode(*objs))
    return path


@pytest.fixture
def histories():
    """s-secret (with a subagent) and s-keep in /work/app, s-sub in /work/app/sub, s-other in /work/application."""
    files = [
        transcript("s-secret", [f"the password hint is {SECRET} do not share", "second secret line"], "/work/app"),
        transcript("s-keep", ["an ordinary question about the build", "another ordinary line"], "/work/app"),
        transcript("s-sub", ["sub folder conversation"], "/work/app/sub"),
        transcript("s-other", ["the application folder is not below app"], "/work/application"),
    ]
    agent_dir = os.path.join(os.path.dirname(files[0]), "s-secret", "subagents")
    files.append(transcript("agent-a1", [f"subagent also saw {SECRET}"], "/work/app", folder=agent_dir,
                            sessionId="s-secret", isSidechain=True, agentId="a1"))
    return files


def import_into(path, files):
    with Journal.open(path) as journal:
        stats = journal.import_files(files)
        assert not stats.errors
        add_vectors(journal.conn)


def add_vectors(conn):
    """A space with a sqlite-vec table and one vector per message, as sync keeps them locally."""
    vectors.load_extension(conn)
    conn.execute("INSERT INTO spaces (key, provider, model, dimensions, created_at) "
                 "VALUES ('test/t/4/{}', 'test', 't', 4, '2026-01-01')")
    conn.execute("CREATE VIRTUAL TABLE vec_1 USING vec0(embedding float[4])")
    for (mid,) in conn.execute("SELECT id FROM messages").fetchall():
        conn.execute("INSERT INTO chunks (id, space_id, message_id, chunk_index, start_char, end_char) "
                     "VALUES (?, 1, ?, 0, 0, 10)", (mid, mid))
        conn.execute("INSERT INTO vec_1 (rowid, embedding) VALUES (?, ?)",
                     (mid, struct.pack("4f", 0.25 * mid, 1.5, 2.5, 3.5)))


def later(minutes=1):
    """A transcript timestamp ``minutes`` from now: a line written after what a test does now."""
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 60 * minutes))


def file_bytes():
    base = paths.journal_path()
    return b"".join(open(p, "rb").read() for p in (base, base + "-wal", base + "-shm") if os.path.exists(p))


def sessions():
    with Journal.open() as journal:
        return sorted(r[0] for r in journal.conn.execute("SELECT id FROM sessions"))


def test_purge_session_leaves_no_byte_of_its_text(histories):
    import_into(paths.journal_path(), histories)
    assert SECRET.encode() in file_bytes()
    assert "s-secret:agent-a1" in sessions()
    result = chats("purge", "--session", "s-secret", "--yes")
    assert result.exit_code == 0, result.output
    assert "removed 2 sessions, 3 messages, 3 vectors" in result.output
    assert "postgres: not configured" in result.output
    assert histories[0] in result.output          # Claude Code's transcript is listed, not deleted
    assert os.path.exists(histories[0])
    assert SECRET.encode() not in file_bytes()
    assert b"second secret line" not in file_bytes()
    assert sessions() == ["s-keep", "s-other", "s-sub"]
    with Journal.open() as journal:
        conn = journal.conn
        conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('integrity-check')")
        assert fulltext(journal, SECRET) == [] and len(fulltext(journal, "ordinary")) == 2
        assert conn.execute("SELECT count(*) FROM chunks").fetchall()[0][0] == 4
        vectors.load_extension(conn)
        assert conn.execute("SELECT count(*) FROM vec_1").fetchall()[0][0] == 4
        assert sorted(r[0] for r in conn.execute("SELECT rowid FROM vec_1")) == \
            sorted(r[0] for r in conn.execute("SELECT id FROM messages"))


def test_purged_lines_are_not_imported_again_but_new_turns_are(histories):
    import_into(paths.journal_path(), histories)
    chats("purge", "--session", "s-secret", "--yes")
    assert chats("import").exit_code == 0
    assert "s-secret" not in sessions()
    transcript("s-secret", ["a new turn after the purge"], "/work/app", ts=later())   # dated after the purge
    chats("import")
    with Journal.open() as journal:
        assert [m["content"] for m in journal.messages("s-secret")] == ["a new turn after the purge"]


def test_purge_project_takes_the_folder_and_below_only(histories):
    import_into(paths.journal_path(), histories)
    result = chats("purge", "--project", "/work/app/", "--yes")
    assert result.exit_code == 0
    assert sessions() == ["s-other"]
    assert SECRET.encode() not in file_bytes() and b"sub folder conversation" not in file_bytes()


def test_dry_run_and_declined_confirmation_remove_nothing(histories):
    import_into(paths.journal_path(), histories)
    before = sessions()
    result = chats("purge", "--session", "s-secret", "--dry-run")
    assert "would remove 2 sessions, 3 messages, 3 vectors" in result.output
    result = chats("purge", "--project", "/work/app", input="n\n")
    assert result.exit_code == 1 and "would remove 4 sessions" in result.output
    assert sessions() == before
    assert "nothing stored for session nope" in chats("purge", "--session", "nope", "--yes").output
    assert chats("purge").exit_code == 1
    assert "exactly one of" in chats("purge", "--session", "a", "--project", "/b").output


# -- Postgres ------------------------------------------------------------------------


def sync(url, journal_path=None):
    with Journal.open(journal_path) as journal:
        report = run_sync(config.load({"database_url": url}), journal=journal, provider=HashEmbedder(), lock=False)
    assert report.ok, report.errors
    return report


def counts(purges):
    """The counts of a sync's ``purges`` (without the lists of what the tombstones did)."""
    return {k: purges[k] for k in ("pushed", "applied")}


def pg_state(url):
    with PgStore.open(url) as store:
        conn = store.conn
        conversations = sorted(r[0] for r in conn.execute("SELECT session_id FROM conversations"))
        hits = conn.execute("SELECT count(*) FROM messages WHERE content LIKE %s", (f"%{SECRET}%",)).fetchone()[0]
        vectors = sum(store.counts()["vectors"].values())
        messages = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    return conversations, hits, vectors, messages


def test_purge_reaches_postgres_directly_when_it_is_up(histories, pg_db_url, monkeypatch):
    import_into(paths.journal_path(), histories)
    sync(pg_db_url)
    assert pg_state(pg_db_url)[1] == 2
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    result = chats("purge", "--session", "s-secret", "--yes")
    assert "postgres: purged: 2 conversations, 3 messages" in result.output
    conversations, hits, vectors, messages = pg_state(pg_db_url)
    assert conversations == ["s-keep", "s-other", "s-sub"] and hits == 0 and vectors == messages == 4
    with PgStore.open(pg_db_url) as store:
        assert store.conn.execute("SELECT kind, target FROM purges").fetchall() == [("session", "s-secret")]


def test_postgres_down_queues_and_the_next_sync_applies_it(histories, pg_db_url, monkeypatch):
    import_into(paths.journal_path(), histories)
    sync(pg_db_url)
    monkeypatch.setenv("DATABASE_URL", DOWN_URL)
    result = chats("purge", "--project", "/work/app", "--yes")
    assert result.exit_code == 0 and "postgres: queued" in result.output and "cannot reach Postgres" in result.output
    assert SECRET.encode() not in file_bytes()
    with Journal.open() as journal:
        assert [q["target"] for q in erase.queued(journal.conn)] == ["/work/app"]
    assert pg_state(pg_db_url)[1] == 2                         # still there: Postgres was down
    report = sync(pg_db_url)                                   # the next sync that reaches Postgres applies it
    assert counts(report.purges) == {"pushed": 1, "applied": 0}
    with Journal.open() as journal:
        assert erase.queued(journal.conn) == []
    assert pg_state(pg_db_url)[:2] == (["s-other"], 0)


def test_a_purge_reaches_every_machine_and_none_pushes_it_back(histories, pg_db_url, tmp_path):
    """Machine B holds the same sessions, some not yet pushed; A purges; B's next sync forgets them."""
    a, b = paths.journal_path(), str(tmp_path / "machine-b" / "journal.db")
    import_into(a, histories)
    import_into(b, histories[:2])                    # B: s-secret and s-keep only...
    sync(pg_db_url, a)
    with Journal.open(b) as journal:                 # ...and a turn of s-secret that A never saw, unpushed
        journal.import_files([transcript("s-secret", [f"late {SECRET} line"], "/work/app",
                                          folder=str(tmp_path / "b-projects"))])
    with Journal.open(a) as journal:
        report = purge.purge(erase.Target.of(session="s-secret"), config.load({"database_url": pg_db_url}),
                             journal=journal)
    assert report.postgres == "purged"
    assert counts(sync(pg_db_url, b).purges) == {"pushed": 0, "applied": 1}     # B's own sync, nothing else
    assert pg_state(pg_db_url)[1] == 0
    with Journal.open(b) as journal:
        assert fulltext(journal, SECRET) == []
        assert sorted(r[0] for r in journal.conn.execute("SELECT id FROM sessions")) == ["s-keep"]
    assert SECRET.encode() not in open(b, "rb").read()
    with Journal.open(b) as journal, PgStore.open(pg_db_url) as store:    # seen: nothing to do any more
        assert counts(purge.sync_purges(journal, store)) == {"pushed": 0, "applied": 0}


def test_a_tombstone_keeps_what_was_written_after_it(pg_db_url, tmp_path):
    a, b = paths.journal_path(), str(tmp_path / "b" / "journal.db")
    with Journal.open(a) as journal:
        journal.import_files([transcript("s-1", ["old words"], "/p")])
    with Journal.open(a) as journal:
        purge.purge(erase.Target.of(session="s-1"), config.load({"database_url": pg_db_url}), journal=journal)
    with Journal.open(b) as journal, PgStore.open(pg_db_url) as store:
        journal.import_files([transcript("s-1", ["continued much later"], "/p", ts="2999-01-01T00:00:00.000Z",
                                         folder=str(tmp_path / "bp"))])
        assert purge.sync_purges(journal, store)["applied"] == 0
        assert [m["content"] for m in journal.messages("s-1")] == ["continued much later"]


def test_purge_json_output(histories):
    import_into(paths.journal_path(), histories)
    report = json.loads(chats("purge", "--session", "s-keep", "--yes", "--json").output)
    assert report["local"]["messages"] == 2 and report["scrubbed"] is True and report["dry_run"] is False
