"""``chats purge`` while a ``chats sync`` has a batch in flight (issue 16, item 1).

The sync reads its batch, then waits on the embedding provider (a local server
speaking Ollama's ``/api/embed`` that holds the batch's request until the test
lets it go); meanwhile ``chats purge --session X --yes`` removes X from the
journal and Postgres. The sync must carry on (the vanished messages' vectors
skipped, not a foreign-key error), be recorded, push the rest of the batch, and
leave nothing of X in either store: not the batch it read before the purge.
"""

import json
import os
import subprocess
import sys

import psycopg
import pytest

from tests.support.stand_ins import EmbedServer, chats, provider_env, turns, write

CHATS = [os.path.join(os.path.dirname(sys.executable), "chats")]
PURGED, KEPT = "sess-purged-in-flight", "sess-kept-in-flight"
MARK = "quetzalpurgeword"      # only in the purged session's text


def write_session(folder, session, words, count):
    return write(folder / f"{session}.jsonl", turns([f"{words} turn {i} of {session}" for i in range(count)], session,
                                                     cwd="/work/inflight"))


@pytest.fixture
def ollama(monkeypatch):
    pytest.importorskip("httpx")
    server = EmbedServer(gate_word=MARK)     # the batch's request holding the purged words waits
    for key, value in provider_env("ollama", server.url).items():
        monkeypatch.setenv(key, value)
    yield server
    server.close()


def test_a_purge_during_a_sync_batch_neither_kills_the_sync_nor_comes_back(ollama, pg_db_url, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("DATABASE_URL", pg_db_url)
    folder = tmp_path / "projects" / "inflight"
    folder.mkdir(parents=True)
    write_session(folder, PURGED, f"{MARK} secret plans", 6)
    write_session(folder, KEPT, "ordinary kept words", 6)
    chats("import", str(folder))

    sync = subprocess.Popen(CHATS + ["sync", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        assert ollama.held.wait(60), "the sync never asked to embed its batch"
        purged = json.loads(chats("purge", "--session", PURGED, "--yes", "--json"))
        assert purged["local"]["messages"] == 6, purged
    finally:
        ollama.release.set()
    out, err = sync.communicate(timeout=120)
    assert sync.returncode == 0, (out, err)
    assert b"Traceback" not in err, err.decode()
    report = json.loads(out[out.index(b"{"):])
    assert report["ok"] and report["errors"] == [], report
    assert report["pending_after"] == 0

    status = json.loads(chats("status", "--json", "--offline"))
    assert status["sync"]["last"] is not None and status["sync"]["last"].get("ok"), status["sync"]

    with psycopg.connect(pg_db_url) as conn:
        sessions = [r[0] for r in conn.execute("SELECT session_id FROM conversations")]
        marked = conn.execute("SELECT count(*) FROM messages WHERE content LIKE %s", (f"%{MARK}%",)).fetchone()[0]
        kept = conn.execute("SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id "
                            "WHERE c.session_id = %s", (KEPT,)).fetchone()[0]
        space, = conn.execute("SELECT id FROM spaces").fetchone()
        vectors = conn.execute(f"SELECT count(*) FROM vectors_{space}").fetchone()[0]
    assert sessions == [KEPT] and marked == 0
    assert kept == 6 and vectors == 6

    again = json.loads(chats("sync", "--json"))           # a later sync puts nothing back
    assert again["ok"] and again["pushed"] == 0
    found = json.loads(chats("search", "--json", "--mode", "fulltext", MARK))
    assert found["hits"] == [], found
    with psycopg.connect(pg_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM conversations WHERE session_id = %s", (PURGED,)).fetchone()[0] == 0
