"""A search's lists read by two threads (``localstore.ivfscan``) and the pair of read transactions that lets
them (``db.Twin``): what a partner reads is what the search's own thread would have read, a list it failed
on is read again, and two connections are trusted to read one state only when no commit came between."""

import threading
import time

import numpy as np

from claude_chats.localstore import db, ivf, ivfscan
from claude_chats.localstore.search import LocalSearch
from claude_chats.search.core import Filters, Plan
from tests.localstore.test_ivf import add_late, chunk_of, clustered, exact_top, fill, tx


def made(tmp_path, late=300):
    """A journal whose space has 16 trained lists and a tail; (path, space id, {message id: vector})."""
    path = str(tmp_path / "journal.db")
    conn = db.connect(path)
    space_id, stored = fill(conn, ["s1"], 3000)
    ivf.retrain(conn, space_id, tx(conn), nlist=16)
    stored.update(add_late(conn, space_id, "s1", clustered(late, seed=4)))
    conn.close()
    return path, space_id, stored


def scanned(conn, space_id, lender=None):
    """Every list of the space as one ``Lists`` scan on ``conn``, after ``lender(lists)`` took what it takes."""
    t = ivf.names(space_id)
    sizes = [(lst, len(ids) // 8) for lst, ids in conn.execute(f"SELECT list, ids FROM {t['lists']} ORDER BY list")]
    total = sum(n for _, n in sizes)
    arrays = np.zeros(total, np.int64), np.zeros(total, np.float32), np.zeros(total, np.float32)
    lists = ivfscan.Lists(t["lists"], sizes, ivf.codec(conn, space_id).dims, ivf.Query(clustered(1, seed=8)[0]),
                          *arrays)
    with db.Snapshot(conn):
        if lender is not None:
            lender(lists)
        lists.scan(conn, ivfscan.Buffer(lists.dims))
    return arrays


def test_lists_a_partner_read_are_those_the_searchs_own_thread_reads(tmp_path):
    path, space_id, _ = made(tmp_path)
    own, other = db.connect(path, readonly=True), db.connect(path, readonly=True)
    alone = scanned(own, space_id)
    taken = []

    def lender(lists):   # the partner's thread takes every list before the search's own takes one
        with db.Snapshot(other):
            taken.append(lists.take(other, lambda n: np.empty((n, lists.dims), np.int8)))

    shared = scanned(own, space_id, lender)
    assert taken == [16]
    for a, b in zip(alone, shared):
        assert np.array_equal(a, b)
    assert np.count_nonzero(alone[0]) == 3000


def test_a_list_the_partner_failed_on_is_read_again_by_the_search(tmp_path):
    """A partner on a connection where the lists cannot be read (here another journal, without them) fails on
    every list it takes: the search reads each again and scores as alone."""
    path, space_id, _ = made(tmp_path)
    own = db.connect(path, readonly=True)
    elsewhere = db.connect(str(tmp_path / "other.db"))
    alone = scanned(own, space_id)
    taken = []

    def lender(lists):
        taken.append(lists.take(elsewhere, lambda n: np.empty((n, lists.dims), np.int8)))

    shared = scanned(own, space_id, lender)
    assert taken == [0]
    for a, b in zip(alone, shared):
        assert np.array_equal(a, b)


class Eager(ivfscan.Partner):
    """A partner whose lending thread takes each offered scan's lists at once, before the search's own thread
    takes any (the order the threads' race may come to), on its own connection."""

    def __init__(self, conn):
        super().__init__()
        self.conn = conn

    def offer(self, lists):
        self.lists += lists.take(self.conn, ivfscan.Buffer(lists.dims))


def test_a_search_whose_lists_a_partner_read_answers_as_one_reading_alone(tmp_path):
    path, space_id, stored = made(tmp_path)
    own, other = db.connect(path, readonly=True), db.connect(path, readonly=True)
    chunks = chunk_of(own)
    for seed in range(5):
        q = clustered(1, seed=30 + seed)[0]
        alone = ivf.Reader(own, space_id, scan=1000).nearest(q, 10)
        partner = Eager(other)
        with db.Twin(own, other) as same:
            assert same
            shared = ivf.Reader(own, space_id, scan=1000).nearest(q, 10, partner=partner)
        assert partner.lists >= 2
        assert alone[0].tolist() == shared[0].tolist() and np.array_equal(alone[1], shared[1])
    q = clustered(1, seed=8)[0]
    found, _ = ivf.Reader(own, space_id, scan=10**9).nearest(q, 10, partner=Eager(other))
    assert {chunks[i] for i in found.tolist()} == exact_top(stored, q)


def test_a_lent_thread_waits_for_the_search_and_returns_when_it_closes(tmp_path):
    """``lend`` takes the lists of each scan offered, however many the vector leg makes (a filtered search
    probes more lists again), and returns when the search closes: also when nothing was ever offered."""
    path, space_id, _ = made(tmp_path)
    own, other = db.connect(path, readonly=True), db.connect(path, readonly=True)
    partner = ivfscan.Partner()
    with db.Twin(own, other) as same:
        assert same
        lender = threading.Thread(target=partner.lend, args=(other,))
        lender.start()
        reader = ivf.Reader(own, space_id, scan=1000)
        for seed in range(20):
            reader.nearest(clustered(1, seed=seed)[0], 10, partner=partner)
        partner.close()
        lender.join(timeout=10)
        assert not lender.is_alive()
    idle = ivfscan.Partner()
    idle.close()
    idle.lend(other)   # returns at once
    assert idle.lists == 0


def test_two_connections_read_one_state_when_no_commit_came_between(tmp_path):
    path, space_id, _ = made(tmp_path)
    first, second = db.connect(path, readonly=True), db.connect(path, readonly=True)
    with db.Twin(first, second) as same:
        assert same and first.in_transaction and second.in_transaction
    assert not first.in_transaction and not second.in_transaction


class CommitFirst:
    """A connection that lets another commit just before its transaction begins (the race ``Twin`` detects)."""

    def __init__(self, conn, writer):
        self.conn, self.writer = conn, writer

    @property
    def in_transaction(self):
        return self.conn.in_transaction

    def execute(self, sql, *args):
        if sql == "BEGIN":
            with self.writer:
                self.writer.execute("INSERT INTO sessions(id, updated_at) VALUES ('racing', '2026-01-01')")
        return self.conn.execute(sql, *args)


def test_a_commit_between_the_two_transactions_makes_them_not_one_state(tmp_path):
    path, space_id, _ = made(tmp_path)
    first, second, writer = (db.connect(path, readonly=True), db.connect(path, readonly=True),
                             db.connect(path))
    with db.Twin(first, CommitFirst(second, writer)) as same:
        assert not same
        # each read its own state: the second began after the commit, the first too (both see it)
        assert second.execute("SELECT count(*) FROM sessions WHERE id = 'racing'").fetchall() == [(1,)]
    assert not first.in_transaction and not second.in_transaction


def test_a_callers_transaction_is_not_taken_for_one_state_and_is_left_open(tmp_path):
    path, space_id, _ = made(tmp_path)
    first, second = db.connect(path, readonly=True), db.connect(path, readonly=True)
    first.execute("BEGIN")
    with db.Twin(first, second) as same:
        assert not same and second.in_transaction
    assert first.in_transaction and not second.in_transaction
    first.execute("COMMIT")


class Slow:
    """A query vector still being embedded when the full-text leg is done (as at 1M messages)."""

    def __init__(self, vector):
        self.vector = vector

    def result(self):
        time.sleep(0.05)
        return self.vector


def test_hybrid_search_answers_alike_whichever_thread_reads_the_lists(tmp_path):
    """Through ``LocalSearch``: a hybrid search (its full-text leg, done first, lending its thread to the vector
    leg's scans) finds the same candidates, ranks and scores as its legs one after the other on one connection."""
    path, space_id, _ = made(tmp_path, late=0)
    apart, together = LocalSearch.open(path), LocalSearch.open(path)
    together._helper_failed = "one connection (test)"
    for seed in range(4):
        vector = clustered(1, seed=50 + seed)[0]
        plans = [Plan("text", ("fulltext", "semantic"), Filters.build(**filters), vector=Slow(vector),
                      space_id=space_id, match="any") for filters in ({}, {"role": "user"})]
        for plan in plans:
            found = apart.candidates(plan)
            assert found and found == together.candidates(plan)
            assert any("semantic" in c.ranks for c in found)
    apart.close()
    together.close()


def test_hybrid_searches_racing_folds_score_every_chunk_by_its_own_codes(tmp_path):
    """Searches whose full-text leg lends its thread, while another connection adds vectors and folds the tail
    into every list again and again: each search answers, nothing waits forever, and every similarity it
    gives is its message's own within the codes' bound. (A commit landing exactly between the pair's
    beginnings is rare here: that one is forced in the test of ``CommitFirst`` above.)"""
    from tests.support.vectors import similarity_slack

    path, space_id, stored = made(tmp_path, late=0)
    writer_conn = db.connect(path)
    slack = similarity_slack(writer_conn, space_id, list(stored.values()))
    late = clustered(600, seed=77)
    known, stop, errors = dict(stored), threading.Event(), []

    def write():
        try:
            for n in range(0, len(late), 100):
                with writer_conn:
                    writer_conn.execute("INSERT INTO sessions(id, updated_at) VALUES (?, '2026-01-01')", (f"race{n}",))
                known.update(add_late(writer_conn, space_id, f"race{n}", late[n:n + 100], name=f"race{n}"))
                ivf.fold(writer_conn, space_id, tx(writer_conn))
                if stop.is_set():
                    return
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)

    searcher = LocalSearch.open(path)
    writer = threading.Thread(target=write)
    writer.start()
    checked = 0
    try:
        for seed in range(40):
            q = clustered(1, seed=100 + seed)[0]
            plan = Plan("text", ("fulltext", "semantic"), Filters.build(), vector=Slow(q), space_id=space_id,
                        match="any")
            for c in searcher.candidates(plan):
                if "semantic" in c.scores and c.key in known:   # (a message added just now may not be yet)
                    assert abs(c.scores["semantic"] - float(np.dot(known[c.key], q / np.linalg.norm(q)))) <= slack
                    checked += 1
    finally:
        stop.set()
        writer.join()
        searcher.close()
    assert not errors and checked > 100
