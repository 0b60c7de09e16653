"""The embedding provider as a searcher reaches it: built once, failures remembered, calls bounded.

``ProviderGuard(factory, deadline)`` gives ``call(fn)``: ``fn(provider)`` (asking
the provider its space, embedding the canary sentence or a query). A provider
over the network that failed is not asked again for ``BACKOFF`` seconds (doubling while it keeps
failing, up to ``BACKOFF_MAX``): ``call`` raises ``ProviderUnavailable`` at once,
saying when it failed and why. With a ``deadline`` (the MCP server), a provider
that talks over the network is called in a thread of its own and waited on at
most that long: a server that accepts and never answers costs a search that
many seconds, not ``embed_timeout``; the request goes on in the background,
and while it does, later calls do not wait for it. A call still running that
no caller gave up on (the MCP server's warm-up asking the model its space) is
waited for, within a later call's own deadline. An in-process model
(llama) is called directly: it is slow only while it loads. ``start(what, fn)`` begins the
same call in a thread and gives a ``Pending``: hybrid search embeds the query while its
full-text leg runs (a local model's arithmetic and SQLite both release the GIL).
"""

import threading
import time

from ..errors import ConfigError, ProviderError, ProviderUnavailable

BACKOFF = 10.0          # seconds a failed provider is left alone, at first
BACKOFF_MAX = 300.0     # ... at most, while it keeps failing
NETWORK = ("ollama", "openai", "bedrock")   # providers whose calls go over a network


class ProviderGuard:
    """See the module docstring. ``deadline``: seconds, or None to wait as long as the provider does."""

    def __init__(self, factory, deadline=None, backoff=BACKOFF, backoff_max=BACKOFF_MAX, clock=time.monotonic):
        self.factory, self.deadline, self.clock = factory, deadline, clock
        self.backoff, self.backoff_max = backoff, backoff_max
        self.provider = None
        self._lock = threading.Lock()
        self._failed_at = self._failure = None
        self._pause = 0.0
        self._running = None    # (Pending, what, started) of the last call run in a thread of its own
        self._abandoned = False  # ... given up on by a caller (it outlived their limit): not waited for

    # -- the provider ----------------------------------------------------------------------

    def get(self):
        """The provider, built on first use (``ConfigError`` / ``ProviderError`` when it cannot be)."""
        self._check()
        if self.provider is None:
            if self.factory is None:
                raise ConfigError("no embedding provider configured")
            self.provider = self.factory()   # a failure here is cheap to repeat (a file, a setting): not kept
        return self.provider

    def call(self, what, fn, wait=None):
        """``fn(provider)``; ``what`` names it in messages ("embedding the query"). ``wait``: seconds left
        of the caller's own budget (None: the guard's ``deadline``)."""
        limit = self.deadline if wait is None else wait
        limit = self._behind(limit)
        provider = self.get()
        if limit is None or not networked(provider):
            return self._run(fn, provider)
        return self._bounded(what, fn, provider, max(0.0, limit))

    def start(self, what, fn, wait=None):
        """``call(what, fn, wait)`` begun now in a thread of its own: a ``Pending`` of its value."""
        return Pending(lambda: self.call(what, fn, wait))

    def close(self):
        if self.provider is not None and hasattr(self.provider, "close"):
            self.provider.close()

    # -- failures and deadlines --------------------------------------------------------------

    def _behind(self, limit):
        """Wait, within ``limit`` seconds (None: as long as it takes), for a call still running that no
        caller has given up on: the warm-up's question to a server that answers (the MCP server's first
        search came while it ran, and ran full text alone). One that outlived a caller's limit is not
        waited for: a silent server costs one search its deadline, not each. The seconds left."""
        with self._lock:
            running, abandoned = self._running, self._abandoned
        if running is None or abandoned:
            return limit
        started = time.monotonic()
        if running[0].wait(limit):
            return None if limit is None else max(0.0, limit - (time.monotonic() - started))
        with self._lock:
            if self._running is running:
                self._abandoned = True
        return 0.0

    def _check(self):
        with self._lock:
            running = self._running
            if running is not None and not running[0].wait(0):
                raise ProviderUnavailable(f"the embedding model has not answered {running[1]} for "
                                          f"{self.clock() - running[2]:.0f} s (still waiting for it in the background)")
            self._running = None
            if self._failed_at is None:
                return
            left = self._failed_at + self._pause - self.clock()
            if left > 0:
                raise ProviderUnavailable(f"{self._failure} (failed {self.clock() - self._failed_at:.0f} s ago; "
                                          f"asked again in {left:.0f} s)")

    def _run(self, fn, provider):
        try:
            value = fn(provider)
        except ProviderError as exc:
            if networked(provider):   # an in-process model fails fast: nothing to wait for, nothing to remember
                self._failed(exc)
            raise
        self._succeeded()
        return value

    def _bounded(self, what, fn, provider, limit):
        with self._lock:   # while it runs, other calls do not pile onto the same silent server
            running = self._running = (Pending(lambda: self._run(fn, provider), "chats-embed"), what, self.clock())
            self._abandoned = False
        if not running[0].wait(limit):
            with self._lock:
                if self._running is running:
                    self._abandoned = True   # later calls fail at once while it runs on (``_behind``)
            raise ProviderUnavailable(f"the embedding model did not answer {what} within {limit:.1f} s "
                                      "(a search waits no longer; the request goes on in the background)")
        with self._lock:
            if self._running is running:
                self._running = None
        return running[0].result()

    def _failed(self, exc):
        with self._lock:
            self._pause = self.backoff if self._failed_at is None else min(self.backoff_max, self._pause * 2)
            self._failed_at, self._failure = self.clock(), str(exc)

    def _succeeded(self):
        with self._lock:
            self._failed_at = self._failure = None
            self._pause = 0.0


class Pending:
    """A value computed in a thread of its own: ``result()`` waits for it and returns it, or raises what
    computing it raised; ``ms`` is how long computing it took."""

    def __init__(self, fn, name="chats-query-vector"):
        self._box, self.ms = {}, None

        def work():
            started = time.perf_counter()
            try:
                self._box["value"] = fn()
            except BaseException as exc:  # noqa: BLE001 - raised again by result(), in the caller's thread
                self._box["error"] = exc
            self.ms = (time.perf_counter() - started) * 1e3

        self._thread = threading.Thread(target=work, name=name, daemon=True)
        self._thread.start()

    def wait(self, seconds=None):
        """Whether the value is ready, after waiting at most ``seconds`` (None: until it is)."""
        self._thread.join(seconds)
        return not self._thread.is_alive()

    def result(self):
        self.wait()
        if "error" in self._box:
            raise self._box["error"]
        return self._box["value"]


def networked(provider):
    """Whether ``provider``'s calls go over a network (and may hang on a silent server)."""
    return getattr(provider, "name", None) in NETWORK or bool(getattr(provider, "base_url", None))
