"""The ``bedrock`` provider: Amazon Bedrock's embedding models through boto3.

Titan Text Embeddings v2 takes one text per call (``dimensions`` 256/512/1024,
``normalize``), so a batch runs on parallel workers; Cohere embed English /
multilingual v3 and v4 take up to 96 texts and an ``input_type``
(``search_document`` / ``search_query``). Throttling is retried with
exponential backoff and full jitter; a request that runs out of ``timeout``
(botocore's connect and read timeouts) is not retried.
"""

import json
from concurrent.futures import ThreadPoolExecutor

from ..errors import ProviderError, ProviderUnavailable
from . import retry
from .base import DEFAULT_TIMEOUT, QUERY, EmbeddingProvider, require

DEFAULT_MODEL = "amazon.titan-embed-text-v2:0"
RETRY_CODES = {"ThrottlingException", "TooManyRequestsException", "ServiceUnavailableException",
               "ModelNotReadyException", "InternalServerException", "ModelTimeoutException"}


class _Titan:
    dimensions, default, batch_size, max_input_chars = (256, 512, 1024), 1024, 32, 30_000

    @staticmethod
    def bodies(texts, kind, dimensions):
        return [{"inputText": t, "dimensions": dimensions, "normalize": True} for t in texts]

    @staticmethod
    def vectors(answer):
        return [answer["embedding"]]


class _Cohere3:
    dimensions, default, batch_size, max_input_chars = (1024,), 1024, 96, 2048

    @staticmethod
    def input_type(kind):
        return "search_query" if kind == QUERY else "search_document"

    @classmethod
    def bodies(cls, texts, kind, dimensions):
        return [{"texts": list(texts), "input_type": cls.input_type(kind), "truncate": "NONE"}]

    @staticmethod
    def vectors(answer):
        embeddings = answer["embeddings"]
        return embeddings["float"] if isinstance(embeddings, dict) else embeddings


class _Cohere4(_Cohere3):
    dimensions, default, batch_size, max_input_chars = (256, 512, 1024, 1536), 1536, 96, 100_000

    @classmethod
    def bodies(cls, texts, kind, dimensions):
        return [{"texts": list(texts), "input_type": cls.input_type(kind), "embedding_types": ["float"],
                 "output_dimension": dimensions, "truncate": "NONE"}]


def family(model_id):
    """The request/response format of a Bedrock model id (inference-profile prefixes allowed)."""
    if "titan-embed-text-v2" in model_id:
        return _Titan
    if "cohere.embed-v4" in model_id:
        return _Cohere4
    if "cohere.embed-english-v3" in model_id or "cohere.embed-multilingual-v3" in model_id:
        return _Cohere3
    raise ProviderError(f"unsupported Bedrock embedding model {model_id!r}: use amazon.titan-embed-text-v2:0, "
                        "cohere.embed-english-v3, cohere.embed-multilingual-v3 or cohere.embed-v4:0")


class BedrockProvider(EmbeddingProvider):
    name = "bedrock"
    sdk = ("boto3", "bedrock")
    default_model = DEFAULT_MODEL

    def __init__(self, model=None, dimensions=None, region=None, client=None, workers=4, retries=8,
                 backoff=0.5, max_backoff=20.0, timeout=DEFAULT_TIMEOUT, endpoint_url=None):
        self.model_id = model or DEFAULT_MODEL
        self._family = family(self.model_id)
        self.dimensions = dimensions or self._family.default
        if self.dimensions not in self._family.dimensions:
            raise ProviderError(f"{self.model_id} offers dimensions {self._family.dimensions}, not {self.dimensions}")
        self.batch_size, self.max_input_chars = self._family.batch_size, self._family.max_input_chars
        self.retries, self.backoff, self.max_backoff, self.workers = retries, backoff, max_backoff, workers
        self.timeout = timeout
        self._botocore = require("botocore", "bedrock", "the bedrock provider")
        self._client = client or self._make_client(region, endpoint_url)
        self._pool = None

    @classmethod
    def settings_kwargs(cls, settings):
        return {"model": settings.model, "dimensions": settings.dimensions, "region": settings.bedrock_region,
                "timeout": cls.timeout_of(settings)}

    def _make_client(self, region, endpoint_url=None):
        boto3 = require("boto3", "bedrock", "the bedrock provider")
        from botocore.config import Config

        config = Config(retries={"total_max_attempts": 1}, max_pool_connections=max(10, self.workers * 2),
                        connect_timeout=min(self.timeout, 10.0), read_timeout=self.timeout)
        return boto3.client("bedrock-runtime", region_name=region, config=config, endpoint_url=endpoint_url)

    def embed_batch(self, texts, kind):
        bodies = self._family.bodies(texts, kind, self.dimensions)
        if len(bodies) == 1 or self.workers <= 1:
            answers = [self._invoke(body) for body in bodies]
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="bedrock")
            answers = list(self._pool.map(self._invoke, bodies))
        return [vector for answer in answers for vector in self._family.vectors(answer)]

    def _invoke(self, body):
        return retry.call(lambda: self._invoke_once(body), _throttled, retries=self.retries,
                          base=self.backoff, cap=self.max_backoff)

    def _invoke_once(self, body):
        errors = self._botocore.exceptions
        try:
            response = self._client.invoke_model(modelId=self.model_id, body=json.dumps(body),
                                                 contentType="application/json", accept="application/json")
        except errors.NoCredentialsError:
            raise ProviderUnavailable("no AWS credentials for Bedrock: configure a profile, "
                                      "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or SSO") from None
        except errors.ClientError as exc:
            if _throttled(exc):
                raise
            code = exc.response.get("Error", {}).get("Code", "")
            error = ProviderUnavailable if code in ("AccessDeniedException", "ResourceNotFoundException") \
                else ProviderError
            raise error(f"Bedrock {self.model_id}: {exc}") from None
        except (errors.ReadTimeoutError, errors.ConnectTimeoutError):
            raise ProviderUnavailable(f"Bedrock {self.model_id} did not answer within {self.timeout:g} s "
                                      "(the embed_timeout setting)") from None
        except errors.BotoCoreError as exc:
            raise ProviderError(f"Bedrock {self.model_id}: {exc}") from None
        return json.loads(response["body"].read())

    def close(self):
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None


def _throttled(exc):
    response = getattr(exc, "response", None)
    return isinstance(response, dict) and response.get("Error", {}).get("Code") in RETRY_CODES
