"""Ollama model names resolved in a store laid out by the test (no daemon)."""

import hashlib
import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from claude_chats.cli import main
from claude_chats.models import ollama_store
from claude_chats.models.llama import LlamaProvider


def add_model(root, name, gguf_path):
    """Lay out ``name`` the way ``ollama pull`` does: a manifest and content-addressed blobs."""
    data = gguf_path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    blobs = root / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    blob = blobs / f"sha256-{digest}"
    if not blob.exists():
        try:
            os.link(gguf_path, blob)
        except OSError:
            shutil.copyfile(gguf_path, blob)
    params = json.dumps({"num_ctx": 512}).encode()
    params_digest = hashlib.sha256(params).hexdigest()
    (blobs / f"sha256-{params_digest}").write_bytes(params)
    manifest = {
        "schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "digest": f"sha256:{params_digest}", "size": len(params)},
        "layers": [
            {"mediaType": "application/vnd.ollama.image.params", "digest": f"sha256:{params_digest}",
             "size": len(params)},
            {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}", "size": len(data)},
        ],
    }
    path = root / "manifests" / os.path.join(*ollama_store.parse_name(name))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    return blob


@pytest.fixture
def ollama_models(tmp_path, monkeypatch, test_model_path):
    """An Ollama model store laid out as Ollama does (two names, one blob): (its root, the blob)."""
    root = tmp_path / "ollama-models"
    blob = add_model(root, "minilm-test", test_model_path)
    add_model(root, "someone/minilm-test:v2", test_model_path)
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    return root, blob


def test_name_resolves_to_the_model_blob(ollama_models, minilm):
    root, blob = ollama_models
    assert ollama_store.resolve("minilm-test") == str(blob)
    assert ollama_store.resolve("minilm-test:latest") == str(blob)
    assert ollama_store.resolve("someone/minilm-test:v2") == str(blob)
    assert ollama_store.resolve("minilm-test:v2") is None
    assert ollama_store.list_models() == ["minilm-test:latest", "someone/minilm-test:v2"]
    with LlamaProvider(model="minilm-test:latest", threads=1) as provider:
        assert provider.path == str(blob) and provider.model_id == "minilm-test"
        assert provider.space.key == "llama/minilm-test/384/{}"
        text = ["Vectors from the Ollama store are the same model."]
        np.testing.assert_allclose(provider.embed_documents(text), minilm.embed_documents(text), atol=1e-5)


def test_missing_blob_is_not_found(ollama_models):
    root, blob = ollama_models
    blob.unlink()
    assert ollama_store.resolve("minilm-test") is None


@pytest.mark.parametrize("name, parts", [
    ("mxbai-embed-large", ("registry.ollama.ai", "library", "mxbai-embed-large", "latest")),
    ("nomic-embed-text:v1.5", ("registry.ollama.ai", "library", "nomic-embed-text", "v1.5")),
    ("jeffh/intfloat-e5:f16", ("registry.ollama.ai", "jeffh", "intfloat-e5", "f16")),
    ("hf.co/owner/repo-GGUF:Q8_0", ("hf.co", "owner", "repo-GGUF", "Q8_0")),
    ("localhost:5000/ns/model", ("localhost:5000", "ns", "model", "latest")),
])
def test_parse_name(name, parts):
    assert ollama_store.parse_name(name) == parts


def test_default_store_location(monkeypatch):
    monkeypatch.delenv("OLLAMA_MODELS", raising=False)
    assert ollama_store.store_dir() == os.path.expanduser("~/.ollama/models")


def test_pull_reuses_the_ollama_store(ollama_models):
    result = CliRunner().invoke(main, ["models", "pull", "minilm-test"], catch_exceptions=False)
    assert result.exit_code == 0 and "in the Ollama store" in result.output and str(ollama_models[1]) in result.output
