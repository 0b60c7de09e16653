"""Kept lines redacted on more than one core, for a big backlog.

Redacting a kept line (``rawlines.redact_packed``: its JSON read, every string scanned, the document
scanned again as the message text reads it) costs about 0.1 ms of Python, so a year's backlog of a
million lines is two minutes of one core, while the other core waits or builds Postgres' indexes.
``Redactor`` gives each batch's lines, in slices, to worker processes and keeps a slice for itself;
what comes back is what one process gives (the same function on the same bytes, in order).

Workers are used only for a backlog of at least ``POOL_MIN`` lines (a scheduled sync's few hundred
would wait longer for them to start than for the work), with ``redact.redact`` itself (a function
the workers import by name; any other runs here), and while they work: a worker that fails or
dies leaves the rest of the run to this process, which says nothing more than the report's note.
They are spawned (not forked: the sync holds threads and connections) and ignore SIGINT, which
this process handles for them: Ctrl-C stops the run, and the pool is shut down without waiting.
"""

import os

from .. import rawlines
from ..redact import redact as standard

POOL_MIN = 20_000      # kept lines pending, at least, before workers are started
MAX_WORKERS = 3        # besides this process
_clean = None          # a worker's redaction memory (``rawlines.remembering``), kept across its slices


def workers_for(cpus=None):
    """Workers to start besides this process: one less than the cores, at most ``MAX_WORKERS``."""
    cpus = cpus or os.cpu_count() or 1
    return max(0, min(MAX_WORKERS, cpus - 1))


def _start_worker():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the parent stops the run, and the pool with it


def _redact_slice(blobs):
    global _clean
    if _clean is None:
        _clean = rawlines.remembering(standard)
    return [None if blob is None else rawlines.redact_packed(blob, _clean) for blob in blobs]


class Redactor:
    """``lines(blobs) -> [packed redacted line or None]`` (or ``finish(start(blobs))``, to do something
    between); ``close()``. ``redact`` None: the lines packed only."""

    def __init__(self, redact, backlog=0, workers=None):
        self.clean = None if redact is None else rawlines.remembering(redact)
        self.pool, self.workers, self.note = None, 0, None
        count = workers_for() if workers is None else workers
        if redact is standard and backlog >= POOL_MIN and count > 0:
            self._start(count)

    def _start(self, count):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        try:
            self.pool = ProcessPoolExecutor(count, multiprocessing.get_context("spawn"), initializer=_start_worker)
            self.workers = count
        except (OSError, ValueError) as exc:
            self.note = f"kept lines redacted in this process only: workers did not start ({exc})"

    def lines(self, blobs):
        return self.finish(self.start(blobs))

    def start(self, blobs):
        """Hand all but the first slice of ``blobs`` to the workers; ``finish`` does the first here and
        collects the rest (in between, this process may push the previous batch)."""
        if self.pool is None or self.clean is None or len(blobs) < 2 * (self.workers + 1):
            return blobs, []
        size = -(-len(blobs) // (self.workers + 1))
        slices = [blobs[at:at + size] for at in range(0, len(blobs), size)]
        try:
            return slices[0], [(part, self.pool.submit(_redact_slice, part)) for part in slices[1:]]
        except RuntimeError as exc:   # the pool broke since the last batch
            self._stop_pool(exc)
            return blobs, []

    def finish(self, work):
        """The lines of ``start``'s ``blobs``, redacted and packed, in order."""
        first, rest = work
        if self.clean is None:
            return [None if blob is None else rawlines.pack(blob) for blob in first]
        out = self._here(first)
        for part, future in rest:
            try:
                out.extend(future.result())
            except Exception as exc:  # noqa: BLE001 - a worker died or failed: this process does it
                self._stop_pool(exc)
                out.extend(self._here(part))
        return out

    def _here(self, blobs):
        return [None if blob is None else rawlines.redact_packed(blob, self.clean) for blob in blobs]

    def _stop_pool(self, exc):
        if self.pool is not None:
            self.note = f"kept lines redacted in this process from then on: a worker failed ({exc!r})"
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None

    def close(self, wait=True):
        if self.pool is not None:
            self.pool.shutdown(wait=wait, cancel_futures=not wait)
            self.pool = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.close(wait=exc_type is None)
