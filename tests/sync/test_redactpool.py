"""Kept lines redacted by worker processes (``sync.redactpool``): the same bytes, in the same order, as
one process gives; a worker that dies leaves the work to the sync, never a line unredacted; the
pool is only started where it pays, and a sync with it pushes what a sync without it pushes."""

import os
import signal

import psycopg
import pytest

from claude_chats import rawlines
from claude_chats.redact import redact
from claude_chats.sync import redactpool
from tests.support import lines
from tests.support.keyed_secrets import SESSION, keyed_transcript, leaks


def stored_lines(tmp_path):
    """Kept lines as the journal holds them: packed, plain, with keyed secrets, and links (None)."""
    keyed = keyed_transcript(tmp_path / "keyed").read_bytes().splitlines()
    plain = lines.encode(*lines.conversation(40, session="s-plain")).splitlines()
    out = []
    for n, line in enumerate(plain + keyed * 5):
        out.append(rawlines.pack(line) if n % 3 else line)
        if n % 7 == 0:
            out.append(None)
    return out


def one_process(blobs):
    clean = rawlines.remembering(redact)
    return [None if b is None else rawlines.redact_packed(b, clean) for b in blobs]


def test_workers_give_what_one_process_gives_in_order(tmp_path):
    blobs = stored_lines(tmp_path)
    want = one_process(blobs)
    assert leaks(b"".join(rawlines.unpack(b) for b in want if b)) == []
    with redactpool.Redactor(redact, redactpool.POOL_MIN, workers=2) as redactor:
        assert redactor.pool is not None
        got = [redactor.lines(blobs[at:at + 25]) for at in range(0, len(blobs), 25)]
        assert sum(got, []) == want
        assert redactor.note is None


def test_a_worker_that_dies_leaves_its_lines_to_the_sync(tmp_path):
    blobs = stored_lines(tmp_path)
    want = one_process(blobs)
    with redactpool.Redactor(redact, redactpool.POOL_MIN, workers=1) as redactor:
        assert redactor.lines(blobs) == want
        for pid in list(redactor.pool._processes):   # noqa: SLF001 - the worker, killed as the OOM killer would
            os.kill(pid, signal.SIGKILL)
        assert redactor.lines(blobs) == want
        assert redactor.pool is None and "a worker failed" in redactor.note
        assert redactor.lines(blobs) == want


def test_the_pool_starts_only_for_a_big_backlog_and_the_standard_redaction(tmp_path):
    assert redactpool.workers_for(1) == 0 and redactpool.workers_for(2) == 1 and redactpool.workers_for(64) == 3
    with redactpool.Redactor(redact, redactpool.POOL_MIN - 1, workers=2) as small:
        assert small.pool is None
    with redactpool.Redactor(lambda text: text.replace("secret", "[x]"), redactpool.POOL_MIN, workers=2) as own:
        assert own.pool is None                          # a function the workers cannot import by name
        assert own.lines([b'{"a":"a secret"}']) == [rawlines.pack(b'{"a":"a [x]"}')]
    with redactpool.Redactor(None, redactpool.POOL_MIN, workers=2) as none:
        assert none.pool is None and none.lines([b'{"a":1}', None]) == [rawlines.pack(b'{"a":1}'), None]


def test_a_sync_with_workers_pushes_what_a_sync_without_them_pushes(tmp_path, pg_db_url, monkeypatch):
    from claude_chats.localstore.journal import Journal
    from claude_chats.pgstore.store import PgStore
    from claude_chats.sync.engine import Syncer
    from tests.support.fakes import HashEmbedder

    folder = tmp_path / "transcripts"
    keyed_transcript(folder)
    (folder / "s-plain.jsonl").write_bytes(lines.encode(*lines.conversation(30, session="s-plain")))
    pushed, started = [], []
    real_start = redactpool.Redactor._start
    monkeypatch.setattr(redactpool.Redactor, "_start", lambda self, n: started.append(n) or real_start(self, n))
    monkeypatch.setattr(redactpool, "workers_for", lambda cpus=None: 2)
    for pool_min, name in ((10**9, "alone"), (1, "pool")):
        monkeypatch.setattr(redactpool, "POOL_MIN", pool_min)
        started.clear()
        with Journal.open(str(tmp_path / f"{name}.db")) as journal, PgStore.open(pg_db_url) as store:
            with psycopg.connect(pg_db_url, autocommit=True) as conn:   # the other run's push gone
                conn.execute("TRUNCATE conversations CASCADE")
            assert not journal.import_files([str(p) for p in sorted(folder.glob("*.jsonl"))]).errors
            report = Syncer(journal, HashEmbedder(), store, redact=redact, batch_size=7).run()
            assert report.ok and report.raw_lines > 30
            assert started == ([] if name == "alone" else [2])
            pushed.append(store.conn.execute(
                "SELECT c.session_id, r.line_key, r.line FROM raw_lines r JOIN conversations c "
                "ON c.id = r.conversation_id ORDER BY 1, 2").fetchall())
    assert pushed[0] == pushed[1]
    assert leaks(b"".join(rawlines.unpack(bytes(line)) for _s, _k, line in pushed[1] if line)) == []
    assert {s for s, _k, _l in pushed[1]} == {SESSION, "s-plain"}


@pytest.fixture(autouse=True)
def _no_stray_workers():
    yield
    import multiprocessing

    assert not [p for p in multiprocessing.active_children() if p.is_alive()]
