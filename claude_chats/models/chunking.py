"""Split text that exceeds the model's input window into overlapping chunks.

Nothing is silently truncated: ``chunk_text`` asks the provider whether each
chunk fits (token-aware for ``llama``, whose tokenizer is at hand; a character
budget elsewhere) and shrinks it until it does. Boundaries prefer whitespace.
"""

from collections import namedtuple

from ..errors import ProviderError

DOCUMENT, QUERY = "document", "query"   # what a text is embedded as (some models prefix each differently)

OVERLAP = 0.1     # fraction of a chunk repeated at the start of the next one
SHRINK = 0.8      # a chunk that does not fit is retried at this fraction of its size
SNAP_ZONE = 0.2   # look this far back (fraction of the chunk) for a whitespace boundary

Chunk = namedtuple("Chunk", "index start end vector")


def chunk_text(text, provider, overlap=OVERLAP, kind=DOCUMENT):
    """``[(start_char, end_char, chunk_text)]`` covering ``text``; [] for blank text.

    A text that fits is one chunk; a longer one is split into chunks that each
    fit, consecutive chunks overlapping by about ``overlap`` of a chunk.
    """
    if not text.strip():
        return []
    if provider.fits(text, kind):
        return [(0, len(text), text)]
    window = max(1, int(provider.window_chars(text, kind)))
    chunks, start = [], 0
    while True:
        end = _fitting_end(text, start, window, provider, kind)
        chunks.append((start, end, text[start:end]))
        if end >= len(text):
            return chunks
        start = _next_start(text, start, end, overlap)


def _fitting_end(text, start, window, provider, kind):
    end = _snap_end(text, start, min(len(text), start + window))
    while not provider.fits(text[start:end], kind):
        if end - start <= 1:
            raise ProviderError(f"{provider.model_id}: a single character at {start} does not fit the input window")
        end = _snap_end(text, start, start + max(1, int((end - start) * SHRINK)))
    return end


def _snap_end(text, start, end):
    """Move ``end`` back to just after a whitespace near it, if there is one."""
    if end >= len(text):
        return len(text)
    floor = end - max(1, int((end - start) * SNAP_ZONE))
    for i in range(end - 1, max(floor, start), -1):
        if text[i].isspace():
            return i + 1
    return end


def _next_start(text, start, end, overlap):
    """Start of the next chunk: ``overlap`` before ``end``, moved to a word start."""
    back = int((end - start) * overlap)
    pos = end - back
    for i in range(pos, end):
        if text[i - 1].isspace() and not text[i].isspace():
            pos = i
            break
    return max(pos, start + 1)


def embed_texts(provider, texts):
    """Chunk and embed ``texts`` (documents) in as few batches as possible.

    Returns, per text, a list of ``Chunk(index, start, end, vector)``; blank
    texts get an empty list.
    """
    spans = [chunk_text(text, provider) for text in texts]
    flat = [chunk for chunks in spans for _, _, chunk in chunks]
    vectors = provider.embed_documents(flat)
    out, i = [], 0
    for chunks in spans:
        out.append([Chunk(n, s, e, vectors[i + n]) for n, (s, e, _) in enumerate(chunks)])
        i += len(chunks)
    return out
