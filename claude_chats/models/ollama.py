"""The ``ollama`` provider: the Ollama daemon's HTTP API.

``POST /api/embed`` with a batch of inputs (``truncate: false``, so an input
longer than the model's context is an error rather than silently cut), falling
back to the older one-text ``POST /api/embeddings`` when the daemon predates it.
Busy answers (429, 5xx) and dropped connections are retried; a request that
runs out of ``timeout`` is not.

A daemon on this machine over plain http (the usual ``localhost:11434``) is
asked through the standard library's ``http.client`` (``_Local``): each
request costs the asking process 0.16 ms of CPU against httpx's 0.69, and a
whole ``chats search`` no longer imports httpx and builds its client for its
one query (at a million messages 0.29 -> 0.20 s; BENCHMARKS.md, session 28).
Any other URL goes through httpx: TLS verified, proxies from the environment.
"""

import http.client
import ipaddress
import json
import threading
import urllib.parse

from ..errors import ProviderError, ProviderUnavailable
from . import retry
from .base import DEFAULT_TIMEOUT, DOCUMENT, QUERY, EmbeddingProvider, known_prefixes, require

DEFAULT_MODEL = "mxbai-embed-large"
DEFAULT_URL = "http://localhost:11434"
RETRY_STATUS = (429, 500, 502, 503, 504)
ANSWER_MAX = 64 << 20   # bytes a local daemon's answer may hold (32 texts of 4,096 dimensions: ~3 MB)


def normalize_url(value):
    """``OLLAMA_HOST``-style values (``0.0.0.0:11434``, ``localhost``) as a URL."""
    value = (value or DEFAULT_URL).strip().rstrip("/")
    if "://" not in value:
        value = f"http://{value}"
    scheme, _, rest = value.partition("://")
    host = rest.split("/", 1)[0]
    if host.startswith("0.0.0.0"):  # a listen address: connect to this machine
        rest = "127.0.0.1" + rest[len("0.0.0.0"):]
    if ":" not in rest.split("/", 1)[0]:
        head, sep, path = rest.partition("/")
        rest = f"{head}:11434{sep}{path}"
    return f"{scheme}://{rest}"


class _Retryable(ProviderError):
    pass


class OllamaProvider(EmbeddingProvider):
    name = "ollama"
    sdk = ("httpx", "ollama")
    default_model = DEFAULT_MODEL
    max_input_chars = 1500  # a character budget: ~512-token models, denser for code

    def __init__(self, model=None, dimensions=None, base_url=None, timeout=DEFAULT_TIMEOUT, batch_size=32,
                 max_input_chars=None, query_prefix=None, document_prefix=None, retries=4, backoff=0.5):
        self.model_id = (model or DEFAULT_MODEL).removesuffix(":latest")
        self.base_url = normalize_url(base_url)
        self.batch_size = batch_size
        self.max_input_chars = max_input_chars or self.max_input_chars
        known_query, known_document = known_prefixes(self.model_id)
        self.query_prefix = known_query if query_prefix is None else query_prefix
        self.document_prefix = known_document if document_prefix is None else document_prefix
        self.retries, self.backoff, self.timeout = retries, backoff, timeout
        self._local = _Local(self.base_url, timeout) if _Local.serves(self.base_url) else None
        if self._local is None:
            httpx = require("httpx", "ollama", "the ollama provider")
            self._httpx = httpx
            # No TLS context for a plain-http server: httpx makes one for every client by default, loading
            # the CA bundle, 30-60 ms of each process's first search; this client only ever asks its own
            # base URL and follows no redirect, so it never opens a TLS connection then. Any other scheme
            # (https, however spelled) verifies as before.
            verify = not self.base_url.lower().startswith("http://")
            self._client = httpx.Client(base_url=self.base_url, timeout=timeout, verify=verify)
        self._requested_dimensions = dimensions
        self._dimensions = None
        self._legacy = False

    @classmethod
    def settings_kwargs(cls, settings):
        return {"model": settings.model, "dimensions": settings.dimensions, "timeout": cls.timeout_of(settings),
                "base_url": settings.ollama_base_url}

    @property
    def dimensions(self):
        """Known after the first embedding (one probe request when asked before)."""
        if self._dimensions is None:
            self._dimensions = len(self._request([self.document_prefix + "dimensions probe"])[0])
        return self._dimensions

    @property
    def space_options(self):
        return {"document_prefix": self.document_prefix} if self.document_prefix else {}

    def fits(self, text, kind=DOCUMENT):
        prefix = self.query_prefix if kind == QUERY else self.document_prefix
        return len(prefix) + len(text) <= self.max_input_chars

    def embed_batch(self, texts, kind):
        prefix = self.query_prefix if kind == QUERY else self.document_prefix
        vectors = self._request([prefix + text for text in texts])
        if self._dimensions is None and vectors:
            self._dimensions = len(vectors[0])
        return vectors

    def _request(self, texts):
        if not self._legacy:
            try:
                return self._post("/api/embed", self._embed_body(texts))["embeddings"]
            except _Legacy:
                self._legacy = True
        return [self._post("/api/embeddings", {"model": self.model_id, "prompt": t})["embedding"] for t in texts]

    def _embed_body(self, texts):
        body = {"model": self.model_id, "input": texts, "truncate": False}
        if self._requested_dimensions:
            body["dimensions"] = self._requested_dimensions
        return body

    def _post(self, path, body):
        return retry.call(lambda: self._post_once(path, body), lambda exc: isinstance(exc, _Retryable),
                          retries=self.retries, base=self.backoff)

    def _post_once(self, path, body):
        status, data = self._local.post(path, body) if self._local is not None else self._through_httpx(path, body)
        if status == 200:
            try:
                return json.loads(data)
            except ValueError:
                raise ProviderError(f"Ollama {path} answered something that is not JSON: {_text(data)[:200]!r}") from None
        error = _error_text(data)
        if status == 404 and "model" not in error.lower():
            raise _Legacy(error)
        if status == 404:
            raise ProviderUnavailable(f"Ollama has no model {self.model_id!r}: run `ollama pull {self.model_id}`")
        if status in RETRY_STATUS:
            raise _Retryable(f"Ollama {path} answered {status}: {error}")
        raise ProviderError(f"Ollama {path} answered {status}: {error}")

    def _through_httpx(self, path, body):
        try:
            response = self._client.post(path, json=body)
        except self._httpx.ConnectError as exc:
            raise _unreachable(self.base_url, exc) from None
        except self._httpx.TimeoutException:
            raise _late(self.base_url, self.timeout) from None
        except self._httpx.TransportError as exc:
            raise _Retryable(f"Ollama at {self.base_url}: {exc}") from None
        return response.status_code, response.content

    def close(self):
        if self._local is not None:
            self._local.close()
        else:
            self._client.close()


class _Local:
    """A plain-http daemon on this machine through ``http.client`` (see the module docstring): kept-alive
    connections, one per request in flight (a search's query and a sync's batch may overlap), reused.

    ``post`` gives ``(status, body)`` or raises what ``_through_httpx`` raises for the same failure: the
    provider's errors are the same whichever way a request went. A kept connection the daemon closed while
    it was idle is replaced at once and the request sent again (as httpx's pool does): embedding is
    idempotent, and a first request on a new connection is never sent twice."""

    def __init__(self, url, timeout):
        parts = urllib.parse.urlsplit(url)
        self.url, self.host, self.port, self.timeout = url, parts.hostname, parts.port, timeout
        self.prefix = parts.path.rstrip("/")
        self._idle, self._lock = [], threading.Lock()

    @staticmethod
    def serves(url):
        """Whether ``url`` is plain http to this machine (``localhost`` or a loopback address), no credentials."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme.lower() != "http" or parts.username is not None or not parts.hostname:
            return False
        if parts.hostname.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(parts.hostname).is_loopback
        except ValueError:
            return False

    def post(self, path, body):
        payload = json.dumps(body).encode("utf-8")
        with self._lock:
            kept = self._idle.pop() if self._idle else None
        if kept is not None and kept.sock is None:
            kept = None   # closed after an answer that said so: a new one, whose failure to connect says why
        if kept is not None:
            try:
                return self._answer(kept, path, payload)
            except _Dropped:
                pass   # closed while idle: once more on a connection of its own
        try:
            return self._answer(self._connected(), path, payload)
        except _Dropped as exc:
            raise _Retryable(f"Ollama at {self.url}: {exc.__cause__!r}") from None

    def _connected(self):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.connect()
        except TimeoutError:
            raise _late(self.url, self.timeout) from None
        except OSError as exc:
            raise _unreachable(self.url, exc) from None
        return conn

    def _answer(self, conn, path, payload):
        """Send on ``conn``, read the whole answer, keep ``conn`` for the next request; closed on any failure."""
        try:
            conn.request("POST", self.prefix + path, payload, {"Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read(ANSWER_MAX + 1)
            if len(data) > ANSWER_MAX:   # an endless or absurd answer: not read on, not kept
                conn.close()
                raise ProviderError(f"Ollama at {self.url} answered more than {ANSWER_MAX >> 20} MB")
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
            conn.close()
            raise _Dropped() from exc
        except TimeoutError:
            conn.close()
            raise _late(self.url, self.timeout) from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise _Retryable(f"Ollama at {self.url}: {exc!r}") from None
        with self._lock:
            self._idle.append(conn)   # closed by http.client when the daemon said so: reopens by itself
        return response.status, data

    def close(self):
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class _Legacy(Exception):
    """The daemon has no /api/embed."""


class _Dropped(Exception):
    """The daemon closed the connection before answering (``_Local``)."""


def _unreachable(url, exc):
    return ProviderUnavailable(f"Ollama is not reachable at {url} ({exc}); start it "
                               "(`ollama serve`) or set OLLAMA_BASE_URL")


def _late(url, timeout):
    return ProviderUnavailable(f"Ollama at {url} did not answer within {timeout:g} s "
                               "(the embed_timeout setting; a first request may load the model)")


def _text(data):
    return data.decode("utf-8", "replace").strip()


def _error_text(data):
    try:
        answer = json.loads(data)
    except ValueError:
        return _text(data)
    return str(answer.get("error", _text(data))) if isinstance(answer, dict) else _text(data)
