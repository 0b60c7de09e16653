"""The stores of ``chats mcp``, opened in a thread of their own as the process starts (stdlib only).

The front (``mcp.front``) makes one ``Opening`` before FastMCP loads; a search the front answers
itself while FastMCP loads and every tool call of FastMCP's then use the same ``Searcher``.
"""

import threading

from ..errors import ClaudeChatsError

OPEN_GRACE = 1.0   # seconds the stores wait for the first tool call before they open
CLOSE_WAIT = 1.0   # seconds the shutdown waits for the warm-up to finish


class Opening:
    """The searcher, opened in a background thread: the answers to the opening requests do not wait
    for the stores (or their imports), the first tool call does. The same thread then loads the
    embedding model and the vector index, so the first search does not pay for them."""

    def __init__(self, opener, grace=OPEN_GRACE):
        self._searcher = self._error = None
        self._opened, self._wanted = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._open, args=(opener, grace), name="chats-open-stores",
                                        daemon=True)
        self._thread.start()

    def _open(self, opener, grace):
        # Let the opening requests be answered and FastMCP load first (imports here would compete with
        # them for the GIL), unless a tool call wants the stores sooner.
        self._wanted.wait(grace)
        try:
            self._searcher = opener()
        except ClaudeChatsError as exc:   # reported to every tool call, with its message
            self._error = exc
        except Exception as exc:  # noqa: BLE001 - reported to every tool call
            self._error = ClaudeChatsError(f"cannot open the conversation stores: {type(exc).__name__}: {exc}")
        finally:
            self._opened.set()
        if self._searcher is not None:
            try:
                self._searcher.warm()
            except Exception:  # noqa: BLE001 - warming is an optimisation; the search reports errors
                pass

    def get(self):
        """The searcher; a ``ClaudeChatsError`` saying why when it could not be opened (to every call)."""
        self._wanted.set()
        self._opened.wait()
        if self._error is not None:
            raise self._error
        return self._searcher

    def close(self):
        self._wanted.set()
        self._opened.wait()
        # the warm-up may still wait on a silent embedding server: do not hold the shutdown for it
        self._thread.join(CLOSE_WAIT)
        if self._searcher is not None:
            self._searcher.close()


def open_stores():
    """The configured stores' ``Searcher``, as the tools use it: what they return goes into the
    model's context (redacted)."""
    # imported here, in the opening thread: the stores' imports (numpy, psycopg, apsw) must not
    # delay the answers to the opening requests
    from ..stores import open_searcher

    return open_searcher(for_model=True)
