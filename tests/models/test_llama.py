"""The ``llama`` provider, for real, on the converted MiniLM test model."""

import numpy as np
import pytest

from claude_chats import config
from claude_chats.errors import ConfigError, ProviderError, ProviderUnavailable
from claude_chats.models import chunk_text, embed_texts, get_provider
from claude_chats.models.llama import LlamaProvider
from tests.support.vectors import assert_same_vectors

SENTENCES = ["The migration failed because the column already existed.",
             "We added a retry around the flaky network call.",
             "Cats sleep most of the day.",
             "Postgres and pgvector hold the canonical copy."]


def long_message(chars=20_000):
    paragraph = ("While debugging the sync we found that the journal kept the byte offset of each "
                 "transcript, so a crash in the middle of a line never lost data. ")
    text, n = [], 0
    while n < chars:
        piece = f"[{len(text)}] " + paragraph
        text.append(piece)
        n += len(piece)
    return "".join(text)[:chars]


def test_configured_from_settings(test_model_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CHATS_MODEL", str(test_model_path))
    monkeypatch.setenv("CLAUDE_CHATS_THREADS", "1")
    with get_provider(config.load()) as provider:
        assert isinstance(provider, LlamaProvider)
        assert provider.name == "llama" and provider.model_id == "all-MiniLM-L6-v2.f16"
        assert provider.dimensions == 384 and provider.max_input_tokens == 512
        assert provider.space.key == "llama/all-MiniLM-L6-v2.f16/384/{}"


def test_documents_are_normalised_float32(minilm):
    vectors = minilm.embed_documents(SENTENCES)
    assert vectors.dtype == np.float32 and vectors.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar = vectors @ vectors.T
    assert similar[0, 3] > similar[0, 2]  # databases are closer to each other than to cats


def test_batching_does_not_change_vectors(minilm, monkeypatch):
    texts = [f"{s} (variant {i})" for i in range(20) for s in SENTENCES]
    together = minilm.embed_documents(texts)
    monkeypatch.setattr(minilm, "batch_size", 7)  # a capability attribute, not the code under test
    batched = minilm.embed_documents(texts)
    one_by_one = np.stack([minilm.embed_documents([t])[0] for t in texts[:10]])
    assert_same_vectors(batched, together)
    assert_same_vectors(one_by_one, together[:10])


def test_query_versus_document(test_model_path, minilm):
    query = "why did the migration fail?"
    # MiniLM has no instruction prefix: a query is embedded like a document
    assert_same_vectors(minilm.embed_query(query), minilm.embed_documents([query])[0])
    prefixed = LlamaProvider(model=str(test_model_path), query_prefix="query: ", document_prefix="passage: ")
    try:
        assert_same_vectors(prefixed.embed_query(query), minilm.embed_documents(["query: " + query])[0])
        assert_same_vectors(prefixed.embed_documents([SENTENCES[0]])[0],
                            minilm.embed_documents(["passage: " + SENTENCES[0]])[0])
        assert prefixed.space.options == {"document_prefix": "passage: "}
        assert prefixed.space.key != minilm.space.key
        ranked = prefixed.embed_documents(SENTENCES) @ prefixed.embed_query(query)
        assert int(np.argmax(ranked)) == 0
    finally:
        prefixed.close()


def test_a_20000_character_message_is_chunked_not_truncated(minilm):
    text = long_message()
    chunks = chunk_text(text, minilm)
    assert len(chunks) > 1
    assert chunks[0][0] == 0 and chunks[-1][1] == len(text)
    for (start, end, piece), (next_start, _, _) in zip(chunks, chunks[1:]):
        assert piece == text[start:end]
        assert next_start < end  # overlap: nothing falls between two chunks
    for start, end, piece in chunks:
        assert minilm.count_tokens(piece) <= minilm.max_input_tokens
        assert minilm.count_tokens(piece) > minilm.max_input_tokens // 2  # the window is used, not wasted
    [embedded] = embed_texts(minilm, [text])
    assert [(c.index, c.start, c.end) for c in embedded] == [(i, s, e) for i, (s, e, _) in enumerate(chunks)]
    vectors = np.stack([c.vector for c in embedded])
    assert vectors.shape == (len(chunks), 384)
    assert float((vectors[0] @ vectors[-1])) < 0.999  # different text, different vectors


def test_too_long_input_is_refused_not_truncated(minilm):
    with pytest.raises(ProviderError, match="chunk it first"):
        minilm.embed_documents([long_message(5_000)])


def test_a_long_query_is_chunked_and_averaged(minilm):
    query = long_message(3_000)
    pieces = [piece for _, _, piece in chunk_text(query, minilm)]
    expected = minilm.embed_documents(pieces).mean(axis=0)
    assert_same_vectors(minilm.embed_query(query), expected / np.linalg.norm(expected))


def test_embed_texts_keeps_message_order_and_skips_blank(minilm):
    out = embed_texts(minilm, [SENTENCES[0], "   ", SENTENCES[2]])
    assert [len(chunks) for chunks in out] == [1, 0, 1]
    assert_same_vectors(out[2][0].vector, minilm.embed_documents([SENTENCES[2]])[0])


def test_matryoshka_dimensions(test_model_path, minilm):
    with LlamaProvider(model=str(test_model_path), dimensions=128) as small:
        vector = small.embed_documents([SENTENCES[0]])[0]
        full = minilm.embed_documents([SENTENCES[0]])[0]
        assert vector.shape == (128,) and small.space.key == "llama/all-MiniLM-L6-v2.f16/128/{}"
        assert_same_vectors(vector, full[:128] / np.linalg.norm(full[:128]))
    with pytest.raises(ProviderError, match="384 dimensions"):
        LlamaProvider(model=str(test_model_path), dimensions=1024)


def test_missing_model_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "empty-store"))
    with pytest.raises(ProviderUnavailable, match="ollama pull nomic-embed-text"):
        LlamaProvider(model="nomic-embed-text")
    with pytest.raises(ProviderUnavailable, match="not found"):
        LlamaProvider(model=str(tmp_path / "nope.gguf"))


def test_unknown_provider_name():
    with pytest.raises(ConfigError, match="llama, ollama, openai"):
        get_provider(config.load({"provider": "cohere-direct"}))


def test_flash_attention_gives_the_vectors_of_plain_attention(test_model_path, minilm):
    texts = [f"{s} (variant {i})" for i in range(20) for s in SENTENCES] + [long_message(1500)]
    assert minilm.flash_attn
    with LlamaProvider(model=str(test_model_path), threads=1, flash_attn=False) as plain:
        assert_same_vectors(minilm.embed_documents(texts), plain.embed_documents(texts))


class Ticks:
    """A machine whose other processes keep ``others`` cores busy (never more than it has) while
    this process uses ``own``: /proc/stat's counters, this process's CPU time, a clock."""

    def __init__(self, cores, others, own):
        self.cores, self.others, self.own = cores, others, own
        self.now = self.busy = self.used = 0.0

    def clock(self):
        return self.now

    def ticks(self):
        return self.busy * 100, self.cores * self.now * 100

    def cpu(self):
        return self.used

    def after(self, seconds, auto):
        self.now += seconds
        self.busy += min(self.cores, self.others + self.own) * seconds
        self.used += self.own * seconds
        return auto()


@pytest.mark.parametrize("others, threads", [(0.0, 2), (0.3, 2), (0.6, 1), (1.0, 1), (3.0, 1)])
def test_auto_threads_takes_the_cores_left_idle(monkeypatch, others, threads):
    from claude_chats.models.llama import AutoThreads

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    machine = Ticks(2, others, own=1.0)
    auto = AutoThreads(2, every=2.0, ticks=machine.ticks, clock=machine.clock, own=machine.cpu)
    assert machine.after(1, auto) == 1          # one look: nothing to compare with yet
    assert machine.after(1, auto) == 1          # too soon for a second
    assert machine.after(2, auto) == threads
    machine.others = 2.0                        # someone else starts working
    assert machine.after(0.5, auto) == threads  # not looked at again yet
    assert machine.after(2, auto) == 1


def test_auto_threads_by_default_and_a_setting_fixes_them(test_model_path, minilm):
    assert minilm._auto is None and minilm._threads == 1
    with LlamaProvider(model=str(test_model_path)) as auto:
        assert auto._auto is not None and auto._threads == 1   # starts at one
        auto.embed_documents(SENTENCES)
