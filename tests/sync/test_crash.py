"""kill -9 at several points of a sync: the next run ends exactly where an uninterrupted one would."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from claude_chats.faults import ENV
from claude_chats.localstore.journal import Journal
from claude_chats.pgstore.store import PgStore
from tests.support import ROOT, lines

DRIVER = """
import json, sys
from claude_chats import config
from claude_chats.localstore.journal import Journal
from claude_chats.sync.engine import Syncer
from claude_chats.sync.runner import run_sync
from tests.support.fakes import HashEmbedder
Syncer.defer_index_min = int(sys.argv[4])   # a backlog this big loads without the indexes
with Journal.open(sys.argv[1]) as journal:
    report = run_sync(config.load({"database_url": sys.argv[2]}), journal=journal, provider=HashEmbedder(),
                      batch_size=int(sys.argv[3]))
print(json.dumps(report.as_dict()))
"""


def run_driver(journal_path, url, die_at=None, batch_size=10, bulk=False):
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if die_at:
        env[ENV] = die_at
    defer_min = 10 if bulk else 10_000
    return subprocess.run([sys.executable, "-c", DRIVER, journal_path, url, str(batch_size), str(defer_min)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


class Close:
    """A stored vector that equals another of the same message chunk within max|x| / 4,000 a component."""

    def __init__(self, uuid, index, text):
        self.key, self.vector = (uuid, index), np.array(json.loads(text), dtype=np.float64)

    def __eq__(self, other):
        bound = float(np.abs(other.vector).max()) / 4_000
        return self.key == other.key and np.allclose(self.vector, other.vector, rtol=0, atol=bound)

    def __repr__(self):
        return f"Close{self.key}"


def pg_state(url):
    with PgStore.open(url) as store:
        msgs = store.conn.execute(
            "SELECT c.session_id, m.sequence_num, m.message_uuid, m.content FROM messages m "
            "JOIN conversations c ON c.id = m.conversation_id ORDER BY 1, 2").fetchall()
        # vectors pushed from the journal's copy (a run killed after embedding) come back from its int8
        # codes and 4-bit residuals (``localstore.codes``), within max|x| / 4,064 of what the model gave
        vectors = [Close(uuid, index, text) for uuid, index, text in store.conn.execute(
            "SELECT m.message_uuid, v.chunk_index, v.embedding::text FROM vectors_1 v "
            "JOIN messages m ON m.id = v.message_id ORDER BY 1, 2").fetchall()]
        convs = store.conn.execute("SELECT session_id, name FROM conversations ORDER BY 1").fetchall()
        indexed = store.has_index(1), store.has_text_index()
    return msgs, vectors, convs, indexed


@pytest.fixture
def journal_path(tmp_path):
    path = str(tmp_path / "journal.db")
    transcripts = []
    for n, session in enumerate(("s-a", "s-b", "s-c")):
        t = tmp_path / f"{session}.jsonl"
        t.write_bytes(lines.encode(*lines.conversation(12 + n, session=session)))
        transcripts.append(str(t))
    with Journal.open(path) as journal:
        journal.import_files(transcripts)
    return path


@pytest.fixture
def reference(tmp_path, journal_path, pg_url):
    """What an uninterrupted sync of the same journal leaves in a fresh database."""
    import shutil
    import uuid

    import psycopg

    from tests.support.pg import with_database

    name = f"chats_ref_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = with_database(pg_url, name)
    copy = str(tmp_path / "reference.db")
    shutil.copy(journal_path, copy)
    done = run_driver(copy, url)
    assert done.returncode == 0, done.stderr
    state = pg_state(url)
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
    return state


@pytest.mark.parametrize("die_at, bulk", [
    ("after-embed", False), ("after-embed@3", False), ("mid-copy-push_messages@2", False),
    ("mid-copy-push_chunks", False), ("after-conversations@2", False), ("before-mark", False),
    ("before-mark@3", False),
    ("mid-copy-push_messages@2", True), ("before-mark@3", True),   # the indexes dropped for the load
])
def test_kill_9_then_rerun_ends_identical(journal_path, pg_db_url, reference, die_at, bulk):
    crashed = run_driver(journal_path, pg_db_url, die_at=die_at, bulk=bulk)
    assert crashed.returncode == -9, crashed.stderr
    if bulk:
        assert pg_state(pg_db_url)[3] == (False, False)   # killed before it could rebuild them
    done = run_driver(journal_path, pg_db_url)
    assert done.returncode == 0, done.stderr
    assert pg_state(pg_db_url) == reference
    with Journal.open(journal_path) as journal:
        assert journal.counts()["pending"] == 0
        total = journal.counts()["messages"]
    assert len(reference[0]) == total == len(reference[1])
    again = run_driver(journal_path, pg_db_url)
    assert '"pushed": 0' in again.stdout and pg_state(pg_db_url) == reference
