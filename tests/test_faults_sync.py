"""Sync under faults, against a real Postgres: racing hooks, kill -9 at random times, Postgres outages,
a provider returning vectors of the wrong dimension. Afterwards the journal and Postgres agree: every
message exactly once, with its sequence number, content and vectors.
"""

import json
import os
import random
import subprocess
import sys
import time


from claude_chats import config, paths
from claude_chats.localstore.journal import Journal
from claude_chats.sync.runner import run_sync
from claude_chats.sync.store import PgStore
from tests.fixtures_pg import HashEmbedder
from tests.test_faults_kill import HOOK, LONG, Transcripts, finish, hook_payload, kill_after, start
from tests.test_fuzz_journal import check_journal
from tests.test_search_pg import Proxy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYNC = """
import json, sys
from claude_chats import config
from claude_chats.sync.runner import run_sync
from tests.fixtures_pg import HashEmbedder
report = run_sync(config.load({"database_url": sys.argv[1]}), provider=HashEmbedder(), batch_size=int(sys.argv[2]))
print(json.dumps(report.as_dict()))
"""


def start_sync(url, batch_size=25):
    return subprocess.Popen([sys.executable, "-c", SYNC, url, str(batch_size)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def sync_to_completion(url):
    code, out, err = finish(start_sync(url, 500))
    assert code == 0, err.decode(errors="replace")[-3000:]
    return json.loads(out)


def pg_messages(url):
    with PgStore.open(url) as store:
        rows = store.conn.execute(
            "SELECT m.message_uuid, c.session_id, m.sequence_num, m.role, m.kind, m.content FROM messages m "
            "JOIN conversations c ON c.id = m.conversation_id").fetchall()
        vectors = dict(store.conn.execute(
            "SELECT m.message_uuid, count(v.*) FROM messages m LEFT JOIN vectors_1 v ON v.message_id = m.id "
            "GROUP BY m.message_uuid").fetchall())
    assert len(rows) == len({r[0] for r in rows}), "a message is in Postgres twice"
    return {r[0]: tuple(r[1:]) for r in rows}, vectors


def assert_agree(url):
    """The journal and Postgres hold the same messages; each has its vectors; nothing is pending."""
    rows = check_journal(paths.journal_path())
    pg, vectors = pg_messages(url)
    assert pg == rows
    assert all(vectors.get(u, 0) >= 1 for u in rows)
    with Journal.open() as journal:
        assert journal.counts()["pending"] == 0
    return rows


def test_hooks_race_a_sync_killed_at_random_times_then_stores_agree(tmp_path, pg_db_url):
    """Each round: the transcripts grow, the hooks store the new lines while a sync pushes what is pending;
    the sync is killed at a random time within the measured length of a complete one."""
    rng = random.Random(8001)
    rounds = 25 if LONG else 3
    transcripts = Transcripts(tmp_path / "projects", sessions=2, agents=1)
    transcripts.grow(200)
    for s in transcripts.sessions():
        assert finish(start(HOOK, hook_payload(transcripts, s)))[0] == 0
    started = time.monotonic()
    sync_to_completion(pg_db_url)
    duration = time.monotonic() - started
    killed = 0
    for _ in range(rounds):
        transcripts.grow(200)
        hooks = [start(HOOK, hook_payload(transcripts, s)) for s in transcripts.sessions()]
        time.sleep(rng.uniform(0, 0.3))
        killed += kill_after(start_sync(pg_db_url), rng.uniform(0, duration * 1.1))
        for hook in hooks:
            code, out, err = finish(hook)
            assert code == 0 and out == b"", err
        check_journal(paths.journal_path())
    sync_to_completion(pg_db_url)
    rows = assert_agree(pg_db_url)
    assert set(rows) == transcripts.uuids()
    again = sync_to_completion(pg_db_url)
    assert again["pushed"] == 0 and pg_messages(pg_db_url)[0] == rows
    print(f"\nsync racing hooks: {rounds} rounds, {killed} syncs killed mid-run")


def _grow_and_store(transcripts, n):
    transcripts.grow(n)
    for s in transcripts.sessions():
        assert finish(start(HOOK, hook_payload(transcripts, s)))[0] == 0


def test_postgres_outage_mid_sync_then_recovery(tmp_path, pg_db_url):
    """Postgres goes away (connections dropped, new ones refused) at a random moment of a sync pushing
    small batches, drawn over the measured length of a complete one: the sync reports it and loses
    nothing; once Postgres is back the next sync completes and the stores agree."""
    rng = random.Random(8002)
    outages = 12 if LONG else 2
    proxy = Proxy(pg_db_url).start()
    transcripts = Transcripts(tmp_path / "projects", sessions=2, agents=1)
    mid_push = 0
    try:
        _grow_and_store(transcripts, 300)
        started = time.monotonic()
        finish(start_sync(proxy.url, batch_size=10))
        duration = time.monotonic() - started
        for _ in range(outages):
            _grow_and_store(transcripts, 300)
            sync = start_sync(proxy.url, batch_size=10)
            time.sleep(rng.uniform(0, duration))
            proxy.stop()
            code, out, err = finish(sync)
            assert code == 0, err.decode(errors="replace")[-3000:]
            report = json.loads(out)
            if report["errors"]:
                mid_push += 1
                assert report["postgres"] == "unreachable" or report["pending_after"] > 0, report
                assert all("\n" not in e for e in report["errors"])
            check_journal(paths.journal_path())
            proxy.start()
            assert sync_to_completion(proxy.url)["ok"]
            assert set(assert_agree(pg_db_url)) == transcripts.uuids()
    finally:
        proxy.stop()
    print(f"\npostgres outages: {outages} outages, {mid_push} reported by the sync they cut short, "
          f"{outages - mid_push} after it had finished")


class WrongDimensions(HashEmbedder):
    """Declares 32 dimensions and returns 31: a misconfigured or changed model."""

    def embed_batch(self, texts, kind):
        return super().embed_batch(texts, kind)[:, :31]


def test_vectors_of_the_wrong_dimension_are_rejected_not_stored(tmp_path, pg_db_url):
    transcripts = Transcripts(tmp_path / "projects", sessions=1, agents=0)
    transcripts.grow(30)
    assert finish(start(HOOK, hook_payload(transcripts, "sess-0")))[0] == 0
    settings = config.load({"database_url": pg_db_url})
    with Journal.open() as journal:
        report = run_sync(settings, journal=journal, provider=WrongDimensions(), lock=False)
        assert not report.ok and any("shape" in e or "dimension" in e for e in report.errors), report.errors
        assert journal.counts()["pending"] == 30
        assert journal.conn.execute("SELECT count(*) FROM chunks").fetchall() == [(0,)]
    pg, vectors = pg_messages(pg_db_url) if _has_tables(pg_db_url) else ({}, {})
    assert not any(vectors.values())
    with Journal.open() as journal:
        assert run_sync(settings, journal=journal, provider=HashEmbedder(), lock=False).ok
    assert set(assert_agree(pg_db_url)) == transcripts.uuids()


def _has_tables(url):
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT to_regclass('messages') IS NOT NULL AND to_regclass('vectors_1') IS NOT NULL"
                            ).fetchone()[0]
