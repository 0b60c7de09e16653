"""New turns into open pages as server-sent events, with one cheap look at the journal per second.

One ``Watcher`` per server: while at least one page listens it reads the journal's highest message
rowid once a second (an index lookup, on its own read-only connection) and wakes every listener when
it moved; however many tabs are open, the journal is asked once. Each listener then reads only its
own session's messages after the last one it has (``Searcher.conversation(local_first=True)``: the
hook writes the journal first, Postgres has them only after a sync), redacted as the pages are.
"""

import asyncio
import os

from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from .. import paths, transcript
from ..errors import ClaudeChatsError

INTERVAL = 1.0        # seconds between two looks at the journal
KEEPALIVE = 15.0      # seconds of quiet after which a comment line keeps the connection open
MESSAGE_CHARS = 200_000   # as a session page (``app.MESSAGE_CHARS``): a longer message is cut
MAX_LISTENERS = 64    # open event streams at once: more are refused (a page reconnects later)


class Watcher:
    """Tells listeners when the journal holds new messages (``version``: the highest rowid seen)."""

    def __init__(self, journal_path=None, interval=INTERVAL):
        self.path = journal_path or paths.journal_path()
        self.interval, self.version, self.checks, self.listeners = interval, None, 0, 0
        self._conn, self._changed, self._task = None, None, None

    def _read(self):
        """The journal's highest message rowid (0 when there is no journal yet)."""
        from ..localstore import db

        self.checks += 1
        try:
            if self._conn is None:
                if not os.path.exists(self.path):
                    return 0
                self._conn = db.apsw.Connection(self.path, flags=db.apsw.SQLITE_OPEN_READONLY)
                self._conn.setbusytimeout(200)
            return self._conn.execute("SELECT max(id) FROM messages").fetchone()[0] or 0
        except db.apsw.Error:   # busy, not migrated yet, or replaced under us: look again next time
            self.close()
            return self.version or 0

    async def _poll(self):
        try:
            while self.listeners > 0:
                version = await run_in_threadpool(self._read)
                if version != self.version:
                    self.version = version
                    self._changed.set()
                    self._changed = asyncio.Event()
                await asyncio.sleep(self.interval)
        finally:
            self._task = None

    async def wait(self, seen, timeout):
        """The version once it differs from ``seen`` (or ``seen`` after ``timeout`` seconds)."""
        if self._changed is None:
            self._changed = asyncio.Event()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._poll())
        if self.version is not None and self.version != seen:
            return self.version
        changed = self._changed
        try:
            await asyncio.wait_for(changed.wait(), timeout)
        except asyncio.TimeoutError:
            return seen
        return self.version

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None


async def stream(request, watcher, searcher, session_id, after, render):
    """The event stream of one page: ``messages`` events carrying the HTML (``render(rows)``) of the
    session's messages after seq ``after``, as they are recorded."""
    if watcher.listeners >= MAX_LISTENERS:
        return StreamingResponse(iter([b"retry: 30000\n\n"]), status_code=503, media_type="text/event-stream")

    async def events():
        watcher.listeners += 1
        last, seen = after, None
        try:
            yield "retry: 3000\n\n"
            while not await request.is_disconnected():
                version = await watcher.wait(seen, KEEPALIVE)
                if version == seen:
                    yield ": still here\n\n"
                    continue
                seen = version
                try:
                    rows = await run_in_threadpool(_newer, searcher, session_id, last)
                except ClaudeChatsError:
                    continue
                if rows:
                    last = rows[-1]["seq"]
                    yield _event("messages", render(rows), last)
        finally:
            watcher.listeners -= 1

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def _newer(searcher, session_id, after):
    page = searcher.conversation(session_id, start_seq=after + 1, limit=200, kinds=transcript.KINDS,
                                 max_chars=None, message_chars=MESSAGE_CHARS, local_first=True)
    return page["messages"]



def _event(name, data, event_id):
    lines = "".join(f"data: {line}\n" for line in data.splitlines() or [""])
    return f"event: {name}\nid: {int(event_id)}\n{lines}\n"
