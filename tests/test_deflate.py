"""``deflate.compress``: the stream zlib makes with a 32 KB window, byte for byte, made with a window just
large enough (what packing a kept line or a message's text costs: ``claude_chats/deflate.py``)."""

import os
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from claude_chats import deflate
from claude_chats.linedict import CURRENT


def zlib_stream(data, level, zdict=None):
    stream = (zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, zdict) if zdict
              else zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY))
    return stream.compress(data) + stream.flush()


def sample(size, seed):
    """Text-like bytes with repeats near and far (JSON keys, words, hex), ``size`` long."""
    rng = __import__("random").Random(seed)
    words = [b'"type":"assistant"', b"error", b"the", b"def ", b"\\n", os.urandom(8).hex().encode(), b"  "]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) if rng.random() < 0.8 else bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    return bytes(out[:size])


@settings(max_examples=300, deadline=None)
@given(size=st.one_of(st.integers(0, 40_000), st.sampled_from([0, 1, 250, 251, 262, 263, 510, 511, 512, 1786, 1787,
                                                               3840, 3841, 7930, 7931, 16120, 16121, 32506, 32507,
                                                               32768, 65536, 100_000])),
       seed=st.integers(0, 10_000), level=st.sampled_from([1, 6, 9]), with_dictionary=st.booleans())
def test_the_same_bytes_as_zlib_with_a_full_window(size, seed, level, with_dictionary):
    data = sample(size, seed)
    zdict = CURRENT if with_dictionary else None
    made = deflate.compress(data, level, zdict)
    assert made == zlib_stream(data, level, zdict)
    back = zlib.decompressobj(zdict=zdict) if zdict else zlib.decompressobj()
    assert back.decompress(made) == data and back.eof


def test_random_and_repetitive_inputs_at_every_window_edge():
    """Incompressible bytes and one byte repeated (the longest matches), at each size where the window
    ``compress`` picks changes."""
    for bits in range(9, 16):
        for size in ((1 << bits) - 262 - len(CURRENT) + d for d in (-1, 0, 1)):
            for data in (os.urandom(max(size, 0)), b"a" * max(size, 0)):
                for zdict in (None, CURRENT):
                    assert deflate.compress(data, 6, zdict) == zlib_stream(data, 6, zdict)
