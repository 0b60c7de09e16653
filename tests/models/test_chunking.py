"""Chunking properties with a character budget (the model is not the subject here)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_chats.errors import ProviderError
from claude_chats.models import EmbeddingProvider, chunk_text, embed_texts


class Budget(EmbeddingProvider):
    name, model_id, dimensions = "budget", "chars", 8

    def __init__(self, max_input_chars, window=None):
        self.max_input_chars, self.window = max_input_chars, window

    def window_chars(self, text, kind=None):
        return self.window or self.max_input_chars

    def embed_batch(self, texts, kind):
        return [[len(t), 1, 0, 0, 0, 0, 0, 0] for t in texts]


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab c\n\u00e9\u4e2d"), min_size=1, max_size=600),
       budget=st.integers(1, 90), window=st.one_of(st.none(), st.integers(1, 200)))
def test_chunks_cover_fit_overlap_and_progress(text, budget, window):
    provider = Budget(budget, window)
    chunks = chunk_text(text, provider)
    if not text.strip():
        assert chunks == []
        return
    assert chunks[0][0] == 0 and chunks[-1][1] == len(text)
    for start, end, piece in chunks:
        assert piece == text[start:end] and provider.fits(piece) and end > start
    for (s1, e1, _), (s2, e2, _) in zip(chunks, chunks[1:]):
        assert s1 < s2 <= e1 < e2  # moves forward, no gap


def test_short_text_is_one_chunk():
    assert chunk_text("hello world", Budget(100)) == [(0, 11, "hello world")]


def test_boundaries_prefer_whitespace():
    text = " ".join(f"word{i:03d}" for i in range(200))
    chunks = chunk_text(text, Budget(100))
    for start, end, piece in chunks[:-1]:
        assert text[end - 1] == " " and not text[start].isspace()
    overlaps = [e1 - s2 for (_, e1, _), (s2, _, _) in zip(chunks, chunks[1:])]
    assert all(0 < o <= 20 for o in overlaps)


def test_a_window_that_is_too_large_is_shrunk():
    chunks = chunk_text("x" * 1000, Budget(100, window=400))
    assert all(e - s <= 100 for s, e, _ in chunks) and chunks[-1][1] == 1000


def test_nothing_fits_is_an_error():
    class Never(Budget):
        def fits(self, text, kind=None):
            return False

    with pytest.raises(ProviderError, match="does not fit"):
        chunk_text("abc", Never(10))


def test_embed_texts_maps_chunks_back_to_texts():
    provider = Budget(50)
    texts = ["short", "", "a long one " * 20, "x"]
    out = embed_texts(provider, texts)
    assert [len(c) for c in out] == [1, 0, len(chunk_text(texts[2], provider)), 1]
    first = out[2][0]
    assert first.index == 0 and first.start == 0
    assert first.vector.shape == (8,) and abs(float(np.linalg.norm(first.vector)) - 1) < 1e-6


def test_importing_models_is_cheap():
    import subprocess
    import sys

    code = ("import sys, claude_chats.models, claude_chats.localstore.vectors; "
            "print(sorted(m for m in ('llama_cpp', 'boto3', 'botocore', 'openai', 'httpx', 'gguf', "
            "'safetensors', 'huggingface_hub') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
