"""The one provider interface, the embedding-space description, shared helpers.

A provider implements ``embed_batch(texts, kind)``; the base class does the
batching, the float32 conversion and the L2 normalisation, and exposes
``embed_documents`` / ``embed_query`` on top.
"""

import importlib
import json
from dataclasses import dataclass, field

import numpy as np

from ..errors import ProviderError, ProviderUnavailable
from ..redact import redact
from .chunking import DOCUMENT, QUERY, chunk_text

# Seconds one request to a network provider may take (the ``embed_timeout``
# setting). A request that runs out of it is not retried: a search falls back
# to full text and a sync leaves its messages pending, instead of waiting on.
DEFAULT_TIMEOUT = 30.0
RETRIEVAL_PROMPT = "Represent this sentence for searching relevant passages: "
# (query prefix, document prefix) that models were trained with, by base name
KNOWN_PREFIXES = {
    "mxbai-embed-large": (RETRIEVAL_PROMPT, ""),
    "snowflake-arctic-embed": (RETRIEVAL_PROMPT, ""),
    "nomic-embed-text": ("search_query: ", "search_document: "),
}


def known_prefixes(model_id):
    """``(query_prefix, document_prefix)`` a model family expects ("" when none)."""
    base = model_id.rsplit("/", 1)[-1].split(":")[0]
    return KNOWN_PREFIXES.get(base, ("", ""))


def require(module, extra, what=None):
    """Import ``module`` or raise ProviderUnavailable with the install hint for ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ProviderUnavailable(
            f"{what or module} needs the '{module}' package ({exc}); "
            f"install it with: pip install 'claude-chats[{extra}]'") from None


def normalize(vectors):
    """Rows of ``vectors`` as float32, each scaled to unit L2 norm (zero rows stay zero)."""
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return array / np.where(norms == 0, 1, norms)


@dataclass(frozen=True)
class Space:
    """An embedding space: vectors are comparable only within one space.

    ``key`` is the canonical "provider/model/dimensions/options" string stored
    in the journal and in Postgres.
    """

    provider: str
    model: str
    dimensions: int
    options: dict = field(default_factory=dict)

    @property
    def options_json(self):
        return json.dumps(self.options, sort_keys=True, separators=(",", ":"))

    @property
    def key(self):
        return f"{self.provider}/{self.model}/{self.dimensions}/{self.options_json}"

    def __hash__(self):
        return hash(self.key)

    def describe(self):
        """Human form for messages: ``llama mxbai-embed-large (1024 dims)``."""
        extra = f", {self.options_json}" if self.options else ""
        return f"{self.provider} {self.model} ({self.dimensions} dims{extra})"


class EmbeddingProvider:
    """Base class of every provider: subclasses implement ``embed_batch``.

    Capabilities are attributes: ``name`` (registry name), ``model_id``,
    ``dimensions``, ``max_input_tokens`` (None when unknown), ``max_input_chars``
    (the character budget used when no tokenizer is at hand), ``batch_size``.
    """

    name = None
    sdk = None  # (module, extra) the provider needs, for `chats models list`
    model_id = None
    dimensions = None
    max_input_tokens = None
    max_input_chars = 2000
    batch_size = 32
    max_batch_chars = None  # providers with a per-request size limit set it

    @classmethod
    def from_settings(cls, settings, **overrides):
        """Construct from a ``config.Settings``; ``overrides`` win."""
        kwargs = cls.settings_kwargs(settings)
        kwargs.update(overrides)
        return cls(**kwargs)

    @staticmethod
    def settings_kwargs(settings):
        """Constructor arguments taken from the settings."""
        return {"model": settings.model, "dimensions": settings.dimensions}

    @staticmethod
    def timeout_of(settings):
        """``embed_timeout`` of ``settings`` in seconds (the default when unset)."""
        return float(getattr(settings, "embed_timeout", None) or DEFAULT_TIMEOUT)

    def embed_batch(self, texts, kind):
        """Embed at most ``batch_size`` texts; ``kind`` is DOCUMENT or QUERY.

        Returns one vector per text (any array-like); the base class normalises.
        """
        raise NotImplementedError

    def embed_documents(self, texts):
        """Embeddings of ``texts`` as a float32 array (n, dimensions), L2-normalised."""
        return self._embed(list(texts), DOCUMENT)

    def embed_query(self, text):
        """Embedding of a search query as a float32 vector (dimensions,).

        A query longer than the input window is chunked and its chunk vectors
        averaged (then normalised): never truncated.
        """
        if self.fits(text, QUERY):
            return self._embed([text], QUERY)[0]
        pieces = [piece for _, _, piece in chunk_text(text, self, kind=QUERY)] or [text]
        return normalize(self._embed(pieces, QUERY).mean(axis=0))

    def _embed(self, texts, kind):
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        try:
            parts = [self.embed_batch(batch, kind) for batch in self._batches(texts)]
        except ProviderError as exc:
            # An API may echo the request, key included, in its error: never pass a secret on.
            raise type(exc)(redact(str(exc))) from None
        with np.errstate(over="ignore", invalid="ignore"):   # said below, in one line, not as numpy's warning
            vectors = np.concatenate([np.asarray(p, dtype=np.float32).reshape(len(p), -1) for p in parts])
        if vectors.shape != (len(texts), self.dimensions):
            raise ProviderError(f"{self.name} {self.model_id} returned vectors of shape {vectors.shape}, "
                                f"expected ({len(texts)}, {self.dimensions})")
        if not np.isfinite(vectors).all():   # JSON's NaN, or a number past float32: no space holds it
            raise ProviderError(f"{self.name} {self.model_id} returned a vector with NaN or infinite values")
        return normalize(vectors)

    def _batches(self, texts):
        """Runs of at most ``batch_size`` texts and ``max_batch_chars`` characters."""
        batch, size = [], 0
        for text in texts:
            if batch and (len(batch) == self.batch_size or
                          (self.max_batch_chars and size + len(text) > self.max_batch_chars)):
                yield batch
                batch, size = [], 0
            batch.append(text)
            size += len(text)
        if batch:
            yield batch

    @property
    def space_options(self):
        """Options that change the vectors (part of the space key)."""
        return {}

    @property
    def space(self):
        return Space(self.name, self.model_id, int(self.dimensions), self.space_options)

    def fits(self, text, kind=DOCUMENT):
        """Whether ``text`` (a DOCUMENT or QUERY) fits the model's input window untruncated."""
        return len(text) <= self.max_input_chars

    def window_chars(self, text, kind=DOCUMENT):
        """Characters per chunk to try first when ``text`` does not fit."""
        return self.max_input_chars

    def close(self):
        """Release the model or connection (a provider is unusable afterwards)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<{type(self).__name__} {self.name} {self.model_id}>"
