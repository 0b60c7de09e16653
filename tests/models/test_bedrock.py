"""``bedrock`` through a real boto3 client and botocore's Stubber (no AWS, no patching)."""

import io
import json

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber

from claude_chats import config
from claude_chats.errors import ProviderError, ProviderUnavailable
from claude_chats.models import get_provider
from claude_chats.models.bedrock import BedrockProvider


class JsonBody:
    """Matches a request body that decodes to ``expected``."""

    def __init__(self, expected):
        self.expected = expected

    def __eq__(self, actual):
        return json.loads(actual) == self.expected

    def __repr__(self):
        return f"JsonBody({self.expected!r})"


def answer(obj):
    data = json.dumps(obj).encode()
    return {"body": StreamingBody(io.BytesIO(data), len(data)), "contentType": "application/json"}


def request(model, body):
    return {"modelId": model, "body": JsonBody(body), "contentType": "application/json",
            "accept": "application/json"}


@pytest.fixture
def client():
    client = boto3.client("bedrock-runtime", region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
    with Stubber(client) as stubber:
        client.stubber = stubber
        yield client
        stubber.assert_no_pending_responses()


def vec(seed, dims):
    return np.random.default_rng(seed).standard_normal(dims).round(4).tolist()


TITAN = "amazon.titan-embed-text-v2:0"


def test_titan_one_text_per_call_with_dimensions_and_normalize(client):
    provider = get_provider(config.load({"provider": "bedrock", "dimensions": 512}), client=client, workers=1)
    for i, text in enumerate(["first", "second"]):
        client.stubber.add_response("invoke_model", answer({"embedding": vec(i, 512), "inputTextTokenCount": 1}),
                                    request(TITAN, {"inputText": text, "dimensions": 512, "normalize": True}))
    vectors = provider.embed_documents(["first", "second"])
    assert vectors.shape == (2, 512) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-6)
    np.testing.assert_allclose(vectors[1], np.array(vec(1, 512)) / np.linalg.norm(vec(1, 512)), atol=1e-6)
    assert provider.space.key == f"bedrock/{TITAN}/512/{{}}"


def test_titan_throttling_is_retried_with_backoff(client):
    provider = BedrockProvider(client=client, workers=1, backoff=0.001)
    for _ in range(3):
        client.stubber.add_client_error("invoke_model", "ThrottlingException", "Too many requests",
                                        http_status_code=429)
    client.stubber.add_response("invoke_model", answer({"embedding": vec(0, 1024)}),
                                request(TITAN, {"inputText": "hello", "dimensions": 1024, "normalize": True}))
    assert provider.embed_query("hello").shape == (1024,)


def test_titan_gives_up_after_the_retries(client):
    provider = BedrockProvider(client=client, workers=1, retries=2, backoff=0.001)
    for _ in range(3):
        client.stubber.add_client_error("invoke_model", "ThrottlingException", "Too many requests",
                                        http_status_code=429)
    with pytest.raises(Exception, match="ThrottlingException"):
        provider.embed_documents(["hello"])


def test_titan_parallel_workers(client):
    provider = BedrockProvider(client=client, workers=4, dimensions=256)
    texts = [f"text {i}" for i in range(10)]
    for _ in texts:  # workers take responses in any order: every answer is the same vector
        client.stubber.add_response("invoke_model", answer({"embedding": vec(7, 256)}),
                                    {"modelId": TITAN, "body": ANY, "contentType": ANY, "accept": ANY})
    vectors = provider.embed_documents(texts)
    assert vectors.shape == (10, 256)
    provider.close()


@pytest.mark.parametrize("kind, input_type", [("document", "search_document"), ("query", "search_query")])
def test_cohere_v3_batches_with_input_type(client, kind, input_type):
    model = "cohere.embed-english-v3"
    provider = BedrockProvider(model=model, client=client)
    texts = [f"message {i}" for i in range(100)] if kind == "document" else ["what broke?"]
    batches = [texts[:96], texts[96:]] if kind == "document" else [texts]
    for batch in batches:
        client.stubber.add_response(
            "invoke_model",
            answer({"id": "x", "response_type": "embeddings_floats", "texts": batch,
                    "embeddings": [vec(len(t), 1024) for t in batch]}),
            request(model, {"texts": batch, "input_type": input_type, "truncate": "NONE"}))
    vectors = provider.embed_documents(texts) if kind == "document" else provider.embed_query(texts[0])[None]
    assert vectors.shape == (len(texts), 1024)
    assert provider.batch_size == 96 and provider.max_input_chars == 2048


def test_cohere_v4_output_dimension_and_typed_embeddings(client):
    model = "us.cohere.embed-v4:0"
    provider = BedrockProvider(model=model, dimensions=256, client=client)
    client.stubber.add_response(
        "invoke_model", answer({"id": "x", "response_type": "embeddings_by_type", "texts": ["a"],
                                "embeddings": {"float": [vec(1, 256)]}}),
        request(model, {"texts": ["a"], "input_type": "search_query", "embedding_types": ["float"],
                        "output_dimension": 256, "truncate": "NONE"}))
    assert provider.embed_query("a").shape == (256,)


def test_access_denied_and_bad_settings(client):
    client.stubber.add_client_error("invoke_model", "AccessDeniedException",
                                    "You don't have access to the model", http_status_code=403)
    with pytest.raises(ProviderUnavailable, match="AccessDenied"):
        BedrockProvider(client=client).embed_documents(["x"])
    with pytest.raises(ProviderError, match="256, 512, 1024"):
        BedrockProvider(client=client, dimensions=300)
    with pytest.raises(ProviderError, match="unsupported Bedrock"):
        BedrockProvider(model="amazon.titan-embed-text-v1", client=client)
