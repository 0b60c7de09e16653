"""``openai`` and ``ollama`` providers against a real HTTP server on 127.0.0.1.

The server (``tests.support.fakes.Server``) speaks each API's documented wire
format and records the requests; nothing in the providers is patched.
"""

import numpy as np
import pytest

from claude_chats import config
from claude_chats.errors import ProviderError, ProviderUnavailable
from claude_chats.models import get_provider
from claude_chats.models.ollama import OllamaProvider, normalize_url
from tests.support.fakes import Server, fake_vector, ollama_embed, ollama_legacy, openai_embeddings, unit

# -- OpenAI ------------------------------------------------------------------------------


@pytest.fixture
def openai_server():
    with Server({"/v1/embeddings": openai_embeddings}) as server:
        yield server


def openai_provider(server, **kwargs):
    return get_provider(config.load({"provider": "openai", "openai_api_key": "sk-test",
                                     "openai_base_url": server.url + "/v1"}), **kwargs)


def test_openai_request_and_response_shapes(openai_server):
    provider = openai_provider(openai_server)
    texts = ["first text", "second text", "third"]
    vectors = provider.embed_documents(texts)
    path, headers, body = openai_server.requests[-1]
    assert path == "/v1/embeddings"
    assert headers["authorization"] == "Bearer sk-test"
    assert body["model"] == "text-embedding-3-small" and body["input"] == texts and body["dimensions"] == 1024
    assert vectors.shape == (3, 1024) and vectors.dtype == np.float32
    for text, vector in zip(texts, vectors):
        np.testing.assert_allclose(vector, unit(fake_vector(text, 1024)), atol=1e-6)
    assert provider.space.key == "openai/text-embedding-3-small/1024/{}"
    np.testing.assert_allclose(provider.embed_query("third"), vectors[2], atol=1e-6)


def test_openai_batches_by_count_and_size(openai_server):
    provider = openai_provider(openai_server, dimensions=256)
    provider.batch_size, provider.max_batch_chars = 3, 30
    texts = [f"text number {i}" for i in range(8)] + ["x"] * 4  # 13 characters: two per request by size
    vectors = provider.embed_documents(texts)
    assert [len(body["input"]) for _, _, body in openai_server.requests] == [2, 2, 2, 3, 3]
    assert vectors.shape == (12, 256)


def test_openai_rate_limit_is_retried(openai_server):
    provider = openai_provider(openai_server, retries=3)
    openai_server.fail_next("/v1/embeddings", 429, {"error": {"message": "Rate limit reached", "type": "requests"}},
                            {"retry-after-ms": "5"}, times=2)
    assert provider.embed_documents(["hello"]).shape == (1, 1024)
    assert len(openai_server.requests) == 3


def test_openai_bad_key_is_a_clear_error(openai_server):
    provider = openai_provider(openai_server)
    openai_server.fail_next("/v1/embeddings", 401, {"error": {"message": "Incorrect API key provided"}})
    with pytest.raises(ProviderUnavailable, match="API key"):
        provider.embed_documents(["hello"])


def test_openai_needs_a_key_for_the_real_api():
    with pytest.raises(ProviderUnavailable, match="OPENAI_API_KEY"):
        get_provider(config.load({"provider": "openai"}))


# -- Ollama ------------------------------------------------------------------------------


@pytest.fixture
def ollama_server():
    with Server({"/api/embed": ollama_embed}) as server:
        yield server


def test_ollama_batch_endpoint(ollama_server, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_PROVIDER", "ollama")
    monkeypatch.setenv("OLLAMA_HOST", ollama_server.url)
    provider = get_provider(config.load())
    vectors = provider.embed_documents(["alpha", "beta"])
    path, _, body = ollama_server.requests[-1]
    assert path == "/api/embed"
    assert body == {"model": "mxbai-embed-large", "input": ["alpha", "beta"], "truncate": False}
    np.testing.assert_allclose(vectors[1], unit(fake_vector("beta", 1024)), atol=1e-6)
    assert provider.dimensions == 1024 and provider.space.key == "ollama/mxbai-embed-large/1024/{}"


def test_ollama_query_uses_the_models_retrieval_prompt(ollama_server):
    provider = OllamaProvider(base_url=ollama_server.url)
    query = provider.embed_query("how did we fix the migration?")
    sent = ollama_server.requests[-1][2]["input"]
    assert sent == ["Represent this sentence for searching relevant passages: how did we fix the migration?"]
    np.testing.assert_allclose(query, unit(fake_vector(sent[0], 1024)), atol=1e-6)


def test_ollama_dimensions_are_sent_and_probed(ollama_server):
    provider = OllamaProvider(base_url=ollama_server.url, dimensions=512)
    assert provider.dimensions == 512  # probed: one request
    assert ollama_server.requests[-1][2]["dimensions"] == 512


def test_ollama_falls_back_to_the_legacy_endpoint():
    with Server({"/api/embeddings": ollama_legacy}) as server:
        provider = OllamaProvider(base_url=server.url)
        vectors = provider.embed_documents(["one", "two"])
        assert [p for p, _, _ in server.requests] == ["/api/embed", "/api/embeddings", "/api/embeddings"]
        assert [b["prompt"] for _, _, b in server.requests[1:]] == ["one", "two"]
        np.testing.assert_allclose(vectors[0], unit(fake_vector("one", 1024)), atol=1e-6)
        provider.embed_documents(["three"])
        assert server.requests[-1][0] == "/api/embeddings"  # remembered


def test_ollama_busy_server_is_retried(ollama_server):
    provider = OllamaProvider(base_url=ollama_server.url, backoff=0.001)
    ollama_server.fail_next("/api/embed", 503, {"error": "server busy, please try again"}, times=2)
    assert provider.embed_documents(["x"]).shape == (1, 1024)


def test_ollama_missing_model_and_down_daemon(ollama_server):
    with pytest.raises(ProviderUnavailable, match="ollama pull nomic-embed-text"):
        OllamaProvider(model="nomic-embed-text", base_url=ollama_server.url).embed_documents(["x"])
    with pytest.raises(ProviderUnavailable, match="not reachable"):
        OllamaProvider(base_url="http://127.0.0.1:9", retries=0).embed_documents(["x"])


def test_ollama_bad_request_is_not_retried(ollama_server):
    ollama_server.fail_next("/api/embed", 400, {"error": "the input length exceeds the context length"})
    with pytest.raises(ProviderError, match="exceeds the context length"):
        OllamaProvider(base_url=ollama_server.url).embed_documents(["x"])
    assert len(ollama_server.requests) == 1


@pytest.mark.parametrize("value, url", [
    ("0.0.0.0:11434", "http://127.0.0.1:11434"), ("localhost", "http://localhost:11434"),
    ("http://gpu-box:8080/", "http://gpu-box:8080"), (None, "http://localhost:11434"),
])
def test_ollama_host_forms(value, url):
    assert normalize_url(value) == url


@pytest.fixture
def tls_ollama_server(tmp_path):
    """The fake Ollama behind TLS, with a self-signed certificate no trust store holds."""
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with Server({"/api/embed": ollama_embed}) as server:
        server.httpd.socket = context.wrap_socket(server.httpd.socket, server_side=True)
        yield server


@pytest.mark.parametrize("scheme", ["https", "HTTPS"])
def test_ollama_over_tls_still_verifies_the_certificate(tls_ollama_server, scheme):
    """A plain-http Ollama gets a client without a TLS context (its first search 30-60 ms sooner); any other
    scheme, however spelled, keeps verifying: a certificate no trust store holds is refused, nothing is sent."""
    url = tls_ollama_server.url.replace("http", scheme, 1)
    with pytest.raises(ProviderError):
        OllamaProvider(base_url=url, retries=0).embed_documents(["a secret prompt"])
    assert tls_ollama_server.requests == []


def test_ollama_over_plain_http_has_no_tls_context(ollama_server):
    """What makes the first search sooner: the client of a plain-http Ollama loads no CA bundle (the
    cost, 30-60 ms, is in ``ssl.create_default_context``), and embeds as before."""
    import ssl

    made = []
    real = ssl.create_default_context

    def counting(*args, **kwargs):
        made.append(1)
        return real(*args, **kwargs)

    ssl.create_default_context = counting
    try:
        provider = OllamaProvider(base_url=ollama_server.url)
        assert provider.embed_documents(["alpha"]).shape == (1, 1024)
        OllamaProvider(base_url=ollama_server.url.replace("http", "https", 1), retries=0)
    finally:
        ssl.create_default_context = real
    assert made == [1]   # the https one only


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "1e39"])
def test_ollama_vectors_that_are_not_finite_are_refused(ollama_server, bad):
    """A server answering NaN (Python's JSON reads it), infinity or a number past float32 gives a clear
    error, never a vector to store, push or search with (the index's codes and the query's would be
    garbage, and pgvector refuses NaN)."""
    def broken(server, body):
        values = ", ".join(["0.1"] * 1023 + [bad])
        return 200, '{"model": "mxbai-embed-large", "embeddings": [[' + values + ']]}', {}

    ollama_server.routes["/api/embed"] = broken
    provider = OllamaProvider(base_url=ollama_server.url, retries=0)
    with pytest.raises(ProviderError, match="NaN or infinite"):
        provider.embed_query("a query")
    with pytest.raises(ProviderError, match="NaN or infinite"):
        provider.embed_documents(["a message"])
