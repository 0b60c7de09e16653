"""The ``ollama`` provider: the Ollama daemon's HTTP API.

``POST /api/embed`` with a batch of inputs (``truncate: false``, so an input
longer than the model's context is an error rather than silently cut), falling
back to the older one-text ``POST /api/embeddings`` when the daemon predates it.
Busy answers (429, 5xx) and dropped connections are retried; a request that
runs out of ``timeout`` is not.
"""

from ..errors import ProviderError, ProviderUnavailable
from . import retry
from .base import DEFAULT_TIMEOUT, DOCUMENT, QUERY, EmbeddingProvider, known_prefixes, require

DEFAULT_MODEL = "mxbai-embed-large"
DEFAULT_URL = "http://localhost:11434"
RETRY_STATUS = (429, 500, 502, 503, 504)


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
                 max_input_chars=None, query_prefix=None, document_prefix=None, retries=4, backoff=0.5,
                 transport=None):
        httpx = require("httpx", "ollama", "the ollama provider")
        self.model_id = (model or DEFAULT_MODEL).removesuffix(":latest")
        self.base_url = normalize_url(base_url)
        self.batch_size = batch_size
        self.max_input_chars = max_input_chars or self.max_input_chars
        known_query, known_document = known_prefixes(self.model_id)
        self.query_prefix = known_query if query_prefix is None else query_prefix
        self.document_prefix = known_document if document_prefix is None else document_prefix
        self.retries, self.backoff, self.timeout = retries, backoff, timeout
        self._httpx = httpx
        # No TLS context for a plain-http server (a local Ollama): httpx makes one for every client by
        # default, loading the CA bundle, 30-60 ms of each process's first search; this client only
        # ever asks its own base URL and follows no redirect, so it never opens a TLS connection then.
        # Any other scheme (https, however spelled) verifies as before.
        verify = not self.base_url.lower().startswith("http://")
        self._client = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport, verify=verify)
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
        try:
            response = self._client.post(path, json=body)
        except self._httpx.ConnectError as exc:
            raise ProviderUnavailable(f"Ollama is not reachable at {self.base_url} ({exc}); start it "
                                      "(`ollama serve`) or set OLLAMA_BASE_URL") from None
        except self._httpx.TimeoutException:
            raise ProviderUnavailable(f"Ollama at {self.base_url} did not answer within {self.timeout:g} s "
                                      "(the embed_timeout setting; a first request may load the model)") from None
        except self._httpx.TransportError as exc:
            raise _Retryable(f"Ollama at {self.base_url}: {exc}") from None
        if response.status_code == 200:
            return response.json()
        error = _error_text(response)
        if response.status_code == 404 and "model" not in error.lower():
            raise _Legacy(error)
        if response.status_code == 404:
            raise ProviderUnavailable(f"Ollama has no model {self.model_id!r}: run `ollama pull {self.model_id}`")
        if response.status_code in RETRY_STATUS:
            raise _Retryable(f"Ollama {path} answered {response.status_code}: {error}")
        raise ProviderError(f"Ollama {path} answered {response.status_code}: {error}")

    def close(self):
        self._client.close()


class _Legacy(Exception):
    """The daemon has no /api/embed."""


def _error_text(response):
    try:
        return str(response.json().get("error", response.text))
    except ValueError:
        return response.text.strip()
