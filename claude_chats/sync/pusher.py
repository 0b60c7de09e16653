"""Pushing batches on several Postgres connections at once.

Most of a push is Postgres work on one core (``to_tsvector`` of the stored
generated column, index upkeep), so with ``workers`` connections the
server uses that many cores while the client prepares the next batch. Each
batch is still one transaction; ``done(result)`` runs in the caller's thread,
in submission order, after the batch committed (the journal is marked there).
"""

import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor


class Pusher:
    """``submit(batch, done)``; at most ``workers`` batches in flight. ``workers=1``: inline."""

    def __init__(self, store, workers=1):
        self.store, self.workers = store, max(1, int(workers))
        self._pool = ThreadPoolExecutor(self.workers, "chats-push") if self.workers > 1 else None
        self._inflight = deque()
        self._local = threading.local()
        self._stores, self._lock = [], threading.Lock()

    def submit(self, batch, done):
        if self._pool is None:
            done(self.store.push(batch))
            return
        while len(self._inflight) >= self.workers:
            self._finish_one()
        self._inflight.append((self._pool.submit(self._push, batch), done))

    def drain(self):
        """Wait for every batch in flight, calling its ``done``; raises the first failure."""
        first = None
        while self._inflight:
            try:
                self._finish_one()
            except Exception as exc:  # noqa: BLE001 - keep marking the batches that did commit
                first = first or exc
        if first is not None:
            raise first

    def close(self):
        try:
            self.drain()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            for store in self._stores:
                store.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except Exception:  # noqa: BLE001 - the original error is the one to report
            pass

    def _finish_one(self):
        future, done = self._inflight.popleft()
        done(future.result())

    def _push(self, batch):
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = self.store.clone()
            with self._lock:
                self._stores.append(store)
        return store.push(batch)
