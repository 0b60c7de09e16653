"""The ``openai`` provider: the OpenAI embeddings API (or a compatible server).

Batched requests with ``dimensions`` (default 1024, to fit the seed's schema);
rate limits, server errors and lost connections are retried with backoff and
jitter; a request that runs out of ``timeout`` is not (the SDK would retry it,
so its own retries are off).
"""

from ..errors import ProviderError, ProviderUnavailable
from . import retry
from .base import DEFAULT_TIMEOUT, EmbeddingProvider, require

DEFAULT_MODEL = "text-embedding-3-small"
DEFAULT_DIMENSIONS = 1024
DEFAULT_URL = "https://api.openai.com/v1"
NATIVE_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072,
                     "text-embedding-ada-002": 1536}


class OpenAIProvider(EmbeddingProvider):
    name = "openai"
    sdk = ("openai", "openai")
    default_model = DEFAULT_MODEL
    batch_size = 256
    max_input_chars = 16_000      # 8,191 tokens per input, with room for dense text
    max_batch_chars = 600_000     # 300,000 tokens per request

    def __init__(self, model=None, dimensions=None, api_key=None, base_url=None, timeout=DEFAULT_TIMEOUT,
                 retries=6, backoff=0.5, client=None):
        openai = require("openai", "openai", "the openai provider")
        self.model_id = model or DEFAULT_MODEL
        self._send_dimensions = self.model_id.startswith("text-embedding-3") or dimensions is not None
        self.dimensions = dimensions or (DEFAULT_DIMENSIONS if self._send_dimensions
                                         else NATIVE_DIMENSIONS.get(self.model_id))
        if self.dimensions is None:
            raise ProviderError(f"the OpenAI model {self.model_id!r} has no known dimensions: set dimensions "
                                f"(CLAUDE_CHATS_DIMENSIONS) for it, or, if it is not an OpenAI model (one "
                                f"`chats models setup` configured for llama), `chats config set model "
                                f"{DEFAULT_MODEL}`")
        base_url = base_url or DEFAULT_URL
        if not api_key and base_url.rstrip("/") == DEFAULT_URL:
            raise ProviderUnavailable("the openai provider needs an API key: set OPENAI_API_KEY")
        self._openai, self.timeout, self.retries, self.backoff = openai, timeout, retries, backoff
        self._client = client or openai.OpenAI(api_key=api_key or "unused", base_url=base_url,
                                               timeout=timeout, max_retries=0)

    @classmethod
    def settings_kwargs(cls, settings):
        return {"model": settings.model, "dimensions": settings.dimensions, "timeout": cls.timeout_of(settings),
                "api_key": settings.openai_api_key, "base_url": settings.openai_base_url}

    def embed_batch(self, texts, kind):
        extra = {"dimensions": self.dimensions} if self._send_dimensions else {}
        sdk = self._openai
        try:
            response = retry.call(lambda: self._client.embeddings.create(model=self.model_id, input=texts, **extra),
                                  self._retryable, retries=self.retries, base=self.backoff)
        except (sdk.AuthenticationError, sdk.PermissionDeniedError) as exc:
            raise ProviderUnavailable(f"OpenAI refused the API key: {exc}") from None
        except sdk.APITimeoutError:
            raise ProviderUnavailable(f"OpenAI API at {self._client.base_url} did not answer within "
                                      f"{self.timeout:g} s (the embed_timeout setting)") from None
        except sdk.APIConnectionError as exc:
            raise ProviderUnavailable(f"OpenAI API not reachable at {self._client.base_url}: {exc}") from None
        except sdk.APIError as exc:
            raise ProviderError(f"OpenAI embeddings failed: {exc}") from None
        return [item.embedding for item in sorted(response.data, key=lambda item: item.index)]

    def _retryable(self, exc):
        sdk = self._openai
        if isinstance(exc, sdk.APITimeoutError):
            return False
        if isinstance(exc, sdk.APIStatusError):
            return exc.status_code in (408, 409, 429) or exc.status_code >= 500
        return isinstance(exc, sdk.APIConnectionError)

    def close(self):
        self._client.close()
