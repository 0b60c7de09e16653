"""The lists one vector search probes, read and scored by its own thread, or by two.

A search's scan reads some 19 MB of coarse codes out of SQLite at a million messages (``ivf``), a
list at a time, and scores each. A hybrid search's full-text leg is usually done before the query's
embedding is: its thread and connection then wait idle while the vector leg scans. ``Partner``
lends them: the two threads take the lists one at a time, each reading on its own connection (SQLite
reads of two connections run in parallel; apsw's and SimSIMD's calls release the GIL), into disjoint
rows of the scan's arrays.

What one thread reads must be of the state the other reads (the candidates' fine codes are found
later by list and slot): a partner is offered lists only when ``db.Twin`` found both connections
reading one state. A list the partner failed on is read again by the search's own thread.
"""

import threading

import numpy as np

COLUMNS = ("ids", "scales", "codes")


class Lists:
    """The lists of one scan: ``(list, rows)`` in the order they fill the arrays ``ids`` (int64),
    ``scales`` (float32) and ``coarse`` (float32, the coarse cosines ``query.coarse`` gives)."""

    def __init__(self, table, sizes, dims, query, ids, scales, coarse):
        self.table, self.sizes, self.dims, self.query = table, sizes, dims, query
        self.ids, self.scales, self.coarse = ids, scales, coarse
        self.starts = np.concatenate([[0], np.cumsum([n for _, n in sizes])]).astype(np.int64)
        self._cond = threading.Condition()
        self._next = self._done = 0
        self._failed = []

    def scan(self, conn, buffer):
        """Read and score lists on ``conn`` until none is left to take, then wait for those a partner took
        and read again any it failed on. ``buffer(n)``: int8 rows of this thread's own."""
        self.take(conn, buffer, raising=True)
        with self._cond:
            while self._done < len(self.sizes):
                self._cond.wait()
            failed, self._failed = self._failed, []
        with _Handles(conn, self.table) as handles:
            for i in failed:
                self._one(handles, i, buffer)

    def take(self, conn, buffer, raising=False):
        """Read and score lists on ``conn``, one at a time, until none is left; returns how many it read."""
        read = 0
        with _Handles(conn, self.table) as handles:
            while True:
                with self._cond:
                    i, self._next = self._next, self._next + 1
                if i >= len(self.sizes):
                    return read
                done = False
                try:
                    self._one(handles, i, buffer)
                    done = True
                    read += 1
                except Exception:  # noqa: BLE001 - a partner's failure: the search's own thread reads it again
                    if raising:
                        raise
                finally:
                    with self._cond:
                        self._done += 1
                        if not done and not raising:
                            self._failed.append(i)
                        self._cond.notify_all()

    def _one(self, handles, i, buffer):
        lst, n = self.sizes[i]
        at = int(self.starts[i])
        codes = buffer(n)
        for column, into in zip(COLUMNS, (self.ids[at:at + n], self.scales[at:at + n], codes)):
            handles.read(column, lst, into)
        self.coarse[at:at + n] = self.query.coarse(codes, self.scales[at:at + n])


class _Handles:
    """One blob handle a column, moved from list to list (``Blob.reopen``: a third of the cost of opening
    one), closed at the end: a read transaction is not ended with one open."""

    def __init__(self, conn, table):
        self.conn, self.table, self.open = conn, table, {}

    def read(self, column, lst, into):
        blob = self.open.get(column)
        if blob is None:
            blob = self.open[column] = self.conn.blob_open("main", self.table, column, lst, False)
        else:
            blob.reopen(lst)
        blob.read_into(into)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for blob in self.open.values():
            blob.close()
        self.open = {}
        return False


class Buffer:
    """``buffer(n)``: ``n`` rows of ``dims`` int8 codes, one thread's own, grown as needed and reused list
    after list (a list's codes are scored and then overwritten by the next list's)."""

    def __init__(self, dims):
        self.dims, self._codes = int(dims), None

    def __call__(self, n):
        if self._codes is None or len(self._codes) < n:
            self._codes = np.empty((max(n, 1024), self.dims), np.int8)
        return self._codes[:n]


class Partner:
    """A thread and a connection lent to a search's scans (``Reader.nearest(partner=...)``).

    The search ``offer``s each scan's ``Lists``; the lending thread, in ``lend(conn)``, takes lists of each
    until none is left, and returns once the search ``close``s (its vector leg is over). ``conn`` must read
    the state the search's connection reads (``db.Twin``)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._offered, self._closed = [], False
        self._buffer = None
        self.lists = 0    # lists the lender read (for tests and benchmarks)

    def offer(self, lists):
        with self._cond:
            if not self._closed:
                self._offered.append(lists)
                self._cond.notify_all()

    def close(self):
        with self._cond:
            self._closed = True
            self._offered = []
            self._cond.notify_all()

    def lend(self, conn):
        while True:
            with self._cond:
                while not self._offered and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                lists = self._offered.pop(0)
            if self._buffer is None or self._buffer.dims != lists.dims:
                self._buffer = Buffer(lists.dims)
            self.lists += lists.take(conn, self._buffer)
