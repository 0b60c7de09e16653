"""A journal gives its free pages back to the disk (``db.reclaim``, at the end of every ``chats sync``):
what a retrain of the vector index freed leaves the file, every vector and message stays, a kill -9
mid-way loses nothing, and a journal made before (no auto-vacuum) keeps its pages without an error."""

import json
import os
import subprocess
import sys

import apsw
from click.testing import CliRunner

from claude_chats import paths
from claude_chats.cli import main
from claude_chats.faults import ENV
from claude_chats.localstore import db, ivf
from claude_chats.localstore.db import Immediate
from tests.localstore.test_ivf import chunk_of, clustered, exact_top, fill
from tests.support import ROOT

RECLAIM = """
import sys
from claude_chats.localstore import db
db.RECLAIM_MIN, db.RECLAIM_STEP = 0, 8
db.reclaim(db.connect(sys.argv[1]))
"""

ROWS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) SELECT zeroblob({size}) FROM n"


def freed_journal(path):
    """A journal with vectors whose index was retrained twice (the old lists' pages free): (space id,
    {message id: vector}, live chunk ids, free pages)."""
    conn = db.connect(path)
    space_id, stored = fill(conn, ["s1", "s2"], 2000)
    for nlist in (8, 16):
        ivf.retrain(conn, space_id, lambda: Immediate(conn), nlist=nlist)
    live = sorted(ivf.live(conn, space_id).tolist())
    free = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    return space_id, stored, live, free


def same_index(conn, space_id, stored, live):
    assert sorted(ivf.live(conn, space_id).tolist()) == live
    chunks = chunk_of(conn)
    for q in clustered(5, seed=4):
        ids, _ = ivf.Reader(conn, space_id, scan=10**9).nearest(q, 10)
        assert {chunks[i] for i in ids.tolist()} == exact_top(stored, q)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_a_new_journal_gives_back_the_pages_a_retrain_freed(tmp_path, monkeypatch):
    path = str(tmp_path / "journal.db")
    space_id, stored, live, free = freed_journal(path)
    size = os.path.getsize(path)
    monkeypatch.setattr(db, "RECLAIM_MIN", 0)
    monkeypatch.setattr(db, "RECLAIM_STEP", 8)
    conn = db.connect(path)
    assert conn.execute("PRAGMA auto_vacuum").fetchall() == [(2,)] and free > 16
    steps = []
    given = db.reclaim(conn, lambda done, before: steps.append((done, before)))
    page = conn.execute("PRAGMA page_size").fetchall()[0][0]
    assert given == free * page and len(steps) >= 3 and steps[-1] == (given, given)
    assert conn.execute("PRAGMA freelist_count").fetchall() == [(0,)]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    assert os.path.getsize(path) == size - given
    same_index(conn, space_id, stored, live)
    assert conn.execute("SELECT count(*) FROM messages").fetchall() == [(4000,)]
    assert db.reclaim(conn) == 0   # nothing left to give


def test_killed_mid_reclaim_the_journal_loses_nothing(tmp_path, monkeypatch):
    path = str(tmp_path / "journal.db")
    space_id, stored, live, free = freed_journal(path)
    env = {**os.environ, ENV: "mid-reclaim@3", "PYTHONPATH": ROOT}
    killed = subprocess.run([sys.executable, "-c", RECLAIM, path], env=env, cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert killed.returncode == -9, killed.stderr
    conn = db.connect(path)
    left = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
    assert free - 2 * 8 == left        # two steps committed, the third rolled back
    same_index(conn, space_id, stored, live)
    monkeypatch.setattr(db, "RECLAIM_MIN", 0)
    assert db.reclaim(conn) > 0 and conn.execute("PRAGMA freelist_count").fetchall() == [(0,)]   # and it goes on
    same_index(conn, space_id, stored, live)


def test_a_journal_made_before_keeps_its_free_pages(tmp_path, monkeypatch):
    path = str(tmp_path / "journal.db")
    old = apsw.Connection(path)
    old.execute("PRAGMA page_size = 4096")
    old.execute("PRAGMA journal_mode = WAL").fetchall()
    old.execute("CREATE TABLE t(x)")
    old.close()
    conn = db.connect(path)   # migrated, as a journal of an earlier version is
    assert conn.execute("PRAGMA auto_vacuum").fetchall() == [(0,)]
    conn.execute(f"INSERT INTO t {ROWS.format(n=300, size=4000)}; DROP TABLE t")
    free = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
    monkeypatch.setattr(db, "RECLAIM_MIN", 0)
    assert free > 100 and db.reclaim(conn) == 0 and conn.execute("PRAGMA freelist_count").fetchall()[0][0] == free


def test_chats_sync_gives_the_free_pages_back_and_says_so(monkeypatch):
    conn = db.connect(paths.journal_path())
    conn.execute(f"CREATE TABLE scratch(x); INSERT INTO scratch {ROWS.format(n=200, size=16000)}; DROP TABLE scratch")
    conn.close()
    monkeypatch.setattr(db, "RECLAIM_MIN", 1 << 20)
    report = json.loads(CliRunner().invoke(main, ["sync", "--json"]).stdout)
    assert report["reclaimed"] >= 200 * 16000 and not [e for e in report["errors"] if "free pages" in e]
    conn = db.connect(paths.journal_path())
    assert conn.execute("PRAGMA freelist_count").fetchall() == [(0,)]
    conn.close()
    text = CliRunner().invoke(main, ["sync"]).output   # nothing free now: nothing said
    assert "free pages" not in text
