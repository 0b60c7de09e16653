"""The converted all-MiniLM-L6-v2 GGUF reproduces sentence-transformers' vectors.

``REFERENCE`` (tests/support/model.py) holds the sentence-transformers
embeddings (mean pooling, normalised) of a few sentences, as little-endian
float32 in base64. They were computed once, offline, by a numpy
re-implementation of the BERT forward pass on the checkpoint's safetensors
weights; ``test_reference_is_the_checkpoints_output``
re-derives them (marked slow), and the first five values of the first sentence
equal the ones published with the model (0.0677, 0.0635, 0.0487, 0.0793, 0.0374).
"""

import json
import math
import unicodedata

import numpy as np
import pytest

from tests.support.model import REFERENCE, reference

MODEL_CARD_PREFIX = [0.0676569, 0.0634959, 0.0487131, 0.0793050, 0.0374481]


def test_reference_matches_the_published_values():
    np.testing.assert_allclose(reference("This is an example sentence")[:5], MODEL_CARD_PREFIX, atol=1e-6)


def test_gguf_embeddings_match_sentence_transformers(minilm):
    sentences = list(REFERENCE)
    vectors = minilm.embed_documents(sentences)
    for sentence, vector in zip(sentences, vectors):
        cosine = float(vector @ reference(sentence))
        assert cosine >= 0.99, (sentence, cosine)
        assert cosine >= 0.9999  # f16 weights: the difference is rounding only


# -- provenance: the reference numbers from the weights, in numpy -----------------------------


def _basic_tokens(text):
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    out = []
    for word in text.split():
        current = ""
        for ch in word:
            if unicodedata.category(ch).startswith("P") or ch in "$+<=>^`|~":
                out += [current, ch] if current else [ch]
                current = ""
            else:
                current += ch
        if current:
            out.append(current)
    return out


def _wordpiece(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and (word[start:end] if start == 0 else "##" + word[start:end]) not in vocab:
            end -= 1
        if end == start:
            return ["[UNK]"]
        pieces.append(word[start:end] if start == 0 else "##" + word[start:end])
        start = end
    return pieces


def _layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps) * w + b


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def sentence_transformers_embedding(text, weights, vocab, config):
    """BertModel forward + mean pooling + normalisation, in float64."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    tokens = ["[CLS]"] + [p for word in _basic_tokens(text) for p in _wordpiece(word, vocab)] + ["[SEP]"]
    ids, n, eps = [vocab[t] for t in tokens], len(tokens), config["layer_norm_eps"]
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    heads = config["num_attention_heads"]
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def linear(h, name):
            return h @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (linear(x, "attention.self." + s).reshape(n, heads, -1).transpose(1, 0, 2)
                   for s in ("query", "key", "value"))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = ((scores / scores.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(n, -1)
        x = _layer_norm(x + linear(context, "attention.output.dense"),
                        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
        x = _layer_norm(x + linear(_gelu(linear(x, "intermediate.dense")), "output.dense"),
                        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


@pytest.mark.slow
def test_reference_is_the_checkpoints_output(test_model_dir):
    from safetensors.numpy import load_file

    weights = load_file(test_model_dir / "model.safetensors")
    vocab = {line.rstrip("\n"): i for i, line in enumerate((test_model_dir / "vocab.txt").open(encoding="utf-8"))}
    config = json.loads((test_model_dir / "config.json").read_text())
    for sentence in REFERENCE:
        computed = sentence_transformers_embedding(sentence, weights, vocab, config)
        np.testing.assert_allclose(computed, reference(sentence), atol=1e-6)
