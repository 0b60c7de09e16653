"""``chats sync`` end to end on a real journal and a real Postgres (model: a test embedder)."""

import json
import time

import pytest

from claude_chats import config
from claude_chats.errors import SyncLocked
from claude_chats.localstore.journal import Journal
from claude_chats.pgstore.store import PgStore
from claude_chats.sync import lock
from claude_chats.sync.runner import run_sync
from tests.support import lines
from tests.support.fakes import HashEmbedder


def write_transcript(folder, session, n, prefix="turn"):
    path = folder / f"{session}.jsonl"
    with open(path, "ab") as fh:
        fh.write(lines.encode(*lines.conversation(n, session=session, prefix=prefix)))
    return path


def next_second():
    """The journal's updated_at has one-second resolution: let a rename get a newer stamp."""
    time.sleep(1.02 - time.time() % 1)


def settings(url=None):
    return config.load({"database_url": url} if url else None)


def sync(journal, url, embedder=None, **kwargs):
    return run_sync(settings(url), journal=journal, provider=embedder or HashEmbedder(), **kwargs)


def pg_messages(url):
    with PgStore.open(url) as store:
        return store.conn.execute(
            "SELECT c.session_id, m.sequence_num, m.message_uuid, m.role, m.kind, m.content "
            "FROM messages m JOIN conversations c ON c.id = m.conversation_id ORDER BY 1, 2").fetchall()


def journal_messages(journal):
    return [tuple(r) for r in journal.conn.execute(
        "SELECT session_id, seq, chats_uuid(uuid), role, kind, chats_text(content) FROM messages JOIN session_numbers ON number = session ORDER BY 1, 2")]


def test_sync_pushes_everything_and_rerun_changes_nothing(empty_journal, tmp_path, pg_db_url):
    for s in ("s-a", "s-b", "s-c"):
        empty_journal.import_files([str(write_transcript(tmp_path, s, 7))])
    report = sync(empty_journal, pg_db_url, batch_size=5)
    assert report.ok, report.errors
    assert (report.pending_before, report.pending_after, report.pushed) == (21, 0, 21)
    assert report.batches == 5 and report.postgres == "ok"
    assert pg_messages(pg_db_url) == journal_messages(empty_journal)
    with PgStore.open(pg_db_url) as store:
        assert store.counts()["vectors"] == {HashEmbedder().space.key: 21}
    again = sync(empty_journal, pg_db_url)
    assert (again.pushed, again.embedded, again.conversations, again.batches) == (0, 0, 0, 0)
    assert json.loads(empty_journal.state("last_sync"))["ok"] is True


def test_new_messages_and_renames_follow(empty_journal, tmp_path, pg_db_url):
    path = write_transcript(tmp_path, "s-a", 4)
    empty_journal.import_files([str(path)])
    sync(empty_journal, pg_db_url)
    next_second()
    with open(path, "ab") as fh:
        fh.write(lines.encode(lines.user("one more", session="s-a"),
                              {"type": "custom-title", "customTitle": "Renamed", "sessionId": "s-a"}))
    empty_journal.import_files([str(path)])
    report = sync(empty_journal, pg_db_url)
    assert report.pushed == 1
    assert pg_messages(pg_db_url) == journal_messages(empty_journal)
    with PgStore.open(pg_db_url) as store:
        assert store.conn.execute("SELECT name FROM conversations").fetchone()[0] == "Renamed"


def test_rename_after_everything_was_pushed(empty_journal, tmp_path, pg_db_url):
    path = write_transcript(tmp_path, "s-a", 2)
    empty_journal.import_files([str(path)])
    sync(empty_journal, pg_db_url)
    next_second()
    with open(path, "ab") as fh:
        fh.write(lines.encode({"type": "custom-title", "customTitle": "Later name", "sessionId": "s-a"}))
    empty_journal.import_files([str(path)])
    assert empty_journal.counts()["pending"] == 0
    report = sync(empty_journal, pg_db_url)
    assert report.conversations == 1 and report.pushed == 0
    with PgStore.open(pg_db_url) as store:
        assert store.conn.execute("SELECT name FROM conversations").fetchone()[0] == "Later name"


def test_provider_down_leaves_messages_pending(empty_journal, tmp_path, pg_db_url):
    empty_journal.import_files([str(write_transcript(tmp_path, "s-a", 3))])
    report = sync(empty_journal, pg_db_url, embedder=HashEmbedder(fail=True))
    assert not report.ok and "provider is down" in report.errors[0]
    assert report.pending_after == 3
    assert pg_messages(pg_db_url) == []
    assert sync(empty_journal, pg_db_url).pending_after == 0


def test_postgres_down_embeds_and_retries_later(empty_journal, tmp_path, pg_db_url):
    empty_journal.import_files([str(write_transcript(tmp_path, "s-a", 3))])
    down = "postgresql://chats:pw@127.0.0.1:9/chats"
    report = sync(empty_journal, down)
    assert report.postgres == "unreachable" and not report.ok
    assert "127.0.0.1:9" in report.errors[0] and ":pw@" not in report.errors[0]
    assert report.pending_after == 3 and report.embedded == 3   # kept in the journal meanwhile
    later = sync(empty_journal, pg_db_url)
    assert later.ok and later.pushed == 3 and later.pending_after == 0
    assert later.embedded == 0 and later.vectors_pushed == 3      # the journal's vectors, not re-embedded


def test_without_postgres_vectors_go_to_the_journal(empty_journal, tmp_path):
    from claude_chats.localstore import vectors

    empty_journal.import_files([str(write_transcript(tmp_path, "s-a", 3))])
    report = sync(empty_journal, None)
    assert report.ok and report.postgres == "not configured"
    assert report.pending_after == 3 and report.embedded == 3
    ((_, space, count, messages),) = vectors.count_vectors(empty_journal.conn)
    assert space.key == HashEmbedder().space.key and count == messages == 3
    assert sync(empty_journal, None).embedded == 0


def test_secrets_are_redacted_before_the_push(empty_journal, tmp_path, pg_db_url):
    from claude_chats.redact import redact

    secret = "AKIA" + "IOSFODNN7EXAMPLQ"
    path = tmp_path / "secret.jsonl"
    path.write_bytes(lines.encode(lines.user(f"my key is {secret} ok", session="s-secret")))
    empty_journal.import_files([str(path)])
    assert sync(empty_journal, pg_db_url, redact=redact).ok
    (content,) = [row[5] for row in pg_messages(pg_db_url)]
    assert secret not in content and "[REDACTED:" in content


def test_redaction_applies_when_text_leaves_the_machine():
    from claude_chats.sync.runner import redactor

    local = HashEmbedder()
    remote_db = config.load({"database_url": "postgresql://u@db.example.com/x?sslmode=require"})
    assert redactor(settings(), local) is None
    assert redactor(settings("postgresql://u@localhost/x"), local) is not None  # every Postgres is a shared copy
    assert redactor(remote_db, local) is not None
    assert redactor(config.load({"database_url": "postgresql://u@db.example.com/x?sslmode=require",
                                 "redact": False}), local) is None

    class Hosted(HashEmbedder):
        name = "openai"

    assert redactor(settings(), Hosted()) is not None


def test_two_journals_one_database(tmp_path, pg_db_url):
    shared = write_transcript(tmp_path, "shared", 6)          # a shared home: both see this session
    only_a = write_transcript(tmp_path, "only-a", 3)
    only_b = write_transcript(tmp_path, "only-b", 4)
    with Journal.open(str(tmp_path / "a.db")) as a, Journal.open(str(tmp_path / "b.db")) as b:
        a.import_files([str(shared), str(only_a)])
        b.import_files([str(shared), str(only_b)])
        ra, rb = sync(a, pg_db_url, lock=False), sync(b, pg_db_url, lock=False)
        assert ra.ok and rb.ok and (ra.pushed, rb.pushed) == (9, 4)
        got = pg_messages(pg_db_url)
        assert sorted(set(journal_messages(a)) | set(journal_messages(b))) == got
        assert a.counts()["pending"] == b.counts()["pending"] == 0


def test_one_sync_at_a_time(empty_journal, pg_db_url):
    with lock.SyncLock():
        assert lock.is_locked()
        with pytest.raises(SyncLocked, match="another `chats sync` is running"):
            sync(empty_journal, pg_db_url)
    assert not lock.is_locked()


def test_insecure_remote_url_is_refused(empty_journal):
    from claude_chats.errors import InsecureConnectionError
    with pytest.raises(InsecureConnectionError):
        sync(empty_journal, "postgresql://u:pw@db.example.com/chats")


def test_a_model_that_does_not_reproduce_the_stored_canary_is_refused(empty_journal, tmp_path, pg_db_url):
    empty_journal.import_files([str(write_transcript(tmp_path, "s-a", 2))])
    assert sync(empty_journal, pg_db_url).ok
    with PgStore.open(pg_db_url) as store:     # same space key, other weights: simulate with another canary
        store.conn.execute("UPDATE spaces SET canary = %s::vector", (str([1.0] + [0.0] * 31),))
    empty_journal.import_files([str(write_transcript(tmp_path, "s-b", 2))])
    report = sync(empty_journal, pg_db_url)
    assert not report.ok and "canary" in report.errors[0]
    assert report.pending_after == 2 and report.pushed == 0


def test_ivfflat_spaces_get_lists_from_the_row_count(empty_journal, tmp_path, pg_db_url):
    empty_journal.import_files([str(write_transcript(tmp_path, "s-a", 5))])
    assert sync(empty_journal, pg_db_url, index_kind="ivfflat").ok
    with PgStore.open(pg_db_url) as store:
        (space,) = store.spaces()
        assert space["index_kind"] == "ivfflat" and store.has_index(space["id"])
        assert store.conn.execute("SELECT index_lists FROM spaces").fetchone()[0] == 1


def test_a_bulk_load_rebuilds_the_index_afterwards(empty_journal, tmp_path, pg_db_url):
    from claude_chats.sync.engine import Syncer

    class Bulk(Syncer):
        defer_index_min = 10

    for s in ("s-a", "s-b"):
        empty_journal.import_files([str(write_transcript(tmp_path, s, 8))])
    with PgStore.open(pg_db_url) as store:
        report = Bulk(empty_journal, HashEmbedder(), store, batch_size=4).run()
        assert report.ok and report.index_rebuilt and report.text_index_rebuilt and report.vectors_pushed == 16
        # the messages and vectors were in before the indexes were built again (and the run ended)
        assert 0 < report.messages_seconds <= report.seconds - report.index_seconds
        (space,) = store.spaces()
        assert store.has_index(space["id"]) and store.has_text_index()
        empty_journal.import_files([str(write_transcript(tmp_path, "s-c", 3))])
        small = Bulk(empty_journal, HashEmbedder(), store).run()        # 3 < 10: the live indexes take them
        assert small.ok and not small.index_rebuilt and not small.text_index_rebuilt
        empty_journal.import_files([str(write_transcript(tmp_path, "s-d", 12))])
        # 12 >= 19 vectors / 4, but fewer than the 19 messages stored: only the vector index goes
        medium = Bulk(empty_journal, HashEmbedder(), store, batch_size=4).run()
        assert medium.ok and medium.index_rebuilt and not medium.text_index_rebuilt
        assert store.conn.execute("SELECT count(*) FROM messages WHERE content_tsv @@ 'turn'::tsquery"
                                  ).fetchone()[0] == 31


def test_the_indexes_build_beside_the_kept_lines_and_a_stop_leaves_them_to_the_next_run(empty_journal, tmp_path,
                                                                                         pg_db_url):
    """The index builds run on a second connection while the kept lines are redacted and pushed: they
    are there when the run ends, a failure of the lines does not lose them, and a run stopped (Ctrl-C)
    meanwhile does not wait for them: the next run makes what is missing."""
    from claude_chats.sync.engine import Syncer

    seen = {}

    class Bulk(Syncer):
        defer_index_min = 10

        def _push_raw_lines(self):
            with PgStore.open(pg_db_url) as other:   # while the lines go: the build's connection is not ours
                seen["backends"] = other.conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND backend_type = 'client backend' AND pid NOT IN (pg_backend_pid(), %s)",
                    (self.store.conn.info.backend_pid,)).fetchone()[0]
            return super()._push_raw_lines()

    for s in ("s-a", "s-b"):
        empty_journal.import_files([str(write_transcript(tmp_path, s, 8))])
    with PgStore.open(pg_db_url) as store:
        report = Bulk(empty_journal, HashEmbedder(), store, batch_size=4).run()
        assert report.ok and report.index_rebuilt and report.text_index_rebuilt and report.raw_lines
        assert seen["backends"] >= 1
        (space,) = store.spaces()
        assert store.has_index(space["id"]) and store.has_text_index()

    class Stopped(Bulk):
        def _push_raw_lines(self):
            raise KeyboardInterrupt

    empty_journal.import_files([str(write_transcript(tmp_path, "s-c", 30))])
    with PgStore.open(pg_db_url) as store:
        with pytest.raises(KeyboardInterrupt):
            Stopped(empty_journal, HashEmbedder(), store, batch_size=4).run()
        # no build left running, no connection left open: a backend whose client closed leaves
        # pg_stat_activity as its process ends, a moment later (1 run in 7 saw it still there); one left
        # open stays
        deadline = time.monotonic() + 10
        while True:
            others = store.conn.execute("SELECT pid, state, left(query, 60) FROM pg_stat_activity WHERE "
                                        "datname = current_database() AND pid <> pg_backend_pid()").fetchall()
            if not others or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert others == []
        report = Bulk(empty_journal, HashEmbedder(), store, batch_size=4).run()
        assert report.ok and report.raw_lines
        (space,) = store.spaces()
        assert store.has_index(space["id"]) and store.has_text_index()


def test_a_bulk_load_that_fails_still_rebuilds_the_indexes(empty_journal, tmp_path, pg_db_url):
    from claude_chats.errors import ProviderError
    from claude_chats.models import CANARY_TEXT
    from claude_chats.sync.engine import Syncer

    class Bulk(Syncer):
        defer_index_min = 10

    class DownAfterCanary(HashEmbedder):   # embeds the canary sentence, fails on the messages
        def embed_batch(self, texts, kind):
            if texts != [CANARY_TEXT]:
                raise ProviderError("test-hash: down after the canary (test)")
            return super().embed_batch(texts, kind)

    empty_journal.import_files([str(write_transcript(tmp_path, "s-a", 4))])
    assert sync(empty_journal, pg_db_url).ok
    empty_journal.import_files([str(write_transcript(tmp_path, "s-b", 12))])
    with PgStore.open(pg_db_url) as store:
        report = Bulk(empty_journal, DownAfterCanary(), store, batch_size=4).run()
        assert not report.ok and "embedding failed" in report.errors[0] and report.pending_after == 12
        assert report.index_rebuilt and report.text_index_rebuilt
        (space,) = store.spaces()
        assert store.has_index(space["id"]) and store.has_text_index()


def test_the_vector_index_tail_is_folded_at_a_sixty_fourth_once_the_run_is_done(empty_journal, tmp_path,
                                                                                monkeypatch):
    """Between a sync's batches the index's tail folds at 1/16 of the space (a fold rewrites every list: a
    year's backlog folded at 1/64 would be folded 89 times); once the run's vectors are in, at 1/64 (a search
    reads its tail rows through SQL). Scaled down: lists from 100 vectors, a tail of 4 rows may fold, a slice
    of 4 messages embedded at a time."""
    from claude_chats.localstore import db, ivf, vectors
    from claude_chats.sync import engine

    monkeypatch.setattr(ivf, "TRAIN_AT", 100)
    monkeypatch.setattr(ivf, "TAIL_MIN", 4)
    monkeypatch.setattr(engine, "EMBED_SLICE", 4)
    shares = []
    real = ivf.maintain

    def watched(conn, space_id, transaction, progress=None, tail_share=ivf.TAIL_SHARE):
        shares.append((tail_share, ivf.counts(conn, space_id)[1]))
        return real(conn, space_id, transaction, progress, tail_share)

    monkeypatch.setattr(ivf, "maintain", watched)
    empty_journal.import_files([str(write_transcript(tmp_path, "s-a", 300))])
    assert sync(empty_journal, None).embedded == 300
    ((_, space, count, _messages),) = vectors.count_vectors(empty_journal.conn)
    listed, tail = ivf.counts(empty_journal.conn, db.find_space(empty_journal.conn, space.key))
    assert listed + tail == count == 300
    assert tail < max(4, 300 // 64)                              # folded at the end ...
    assert {s for s, _ in shares[:-1]} == {16} and shares[-1][0] == 64
    assert shares[-1][1] >= 300 // 64                             # ... which the batches alone had not done
