"""zlib streams of short inputs, made without zlib's cost of a whole window: the same bytes, 2-3x sooner.

``zlib.compress`` (and ``compressobj``) prepare a 32 KB window and its hash chains for every stream:
about 50-70 us before the first byte, more than compressing a 1 KB message's text or a kept line
takes (a kept line packed: 73 us of its ~100; 1.1M lines at a year's size). A window just larger than
the dictionary and the input (``wbits`` 9-15) is prepared in about 5 us, and deflate then finds the
very same matches (no match can reach further back than the input and the dictionary go), so the
compressed data is the same byte for byte; only the header's window size (``CINFO``) and its check
bits (``FCHECK``) differ. ``compress`` writes them as a 32 KB window's stream has them, so its output
is the stream ``zlib.compress`` would have made (``tests/test_deflate.py`` checks it byte for byte),
and the journal's formats, which tell a packed line by its first byte (``0x78``), read it as before.

Imported by the packing functions when they pack, never on the hook's path (which packs nothing).
"""

import zlib

WINDOW = zlib.MAX_WBITS
_LOOKAHEAD = 262   # zlib's MIN_LOOKAHEAD: deflate matches at most this less than the window back


def compress(data, level, zdict=None):
    """``data`` (bytes) as the zlib stream that ``zlib.compressobj(level, DEFLATED, MAX_WBITS, 8,
    Z_DEFAULT_STRATEGY, zdict)`` makes of it, byte for byte."""
    need = len(data) + (len(zdict) if zdict else 0) + _LOOKAHEAD
    wbits = max(9, min(WINDOW, need.bit_length()))
    if zdict:
        stream = zlib.compressobj(level, zlib.DEFLATED, wbits, 8, zlib.Z_DEFAULT_STRATEGY, zdict)
    else:
        stream = zlib.compressobj(level, zlib.DEFLATED, wbits, 8, zlib.Z_DEFAULT_STRATEGY)
    out = stream.compress(data) + stream.flush()
    if wbits == WINDOW:
        return out
    return _as_full_window(out)


def _as_full_window(stream):
    """The zlib header of ``stream`` rewritten to name a 32 KB window (RFC 1950: CINFO 7, FCHECK so that
    CMF * 256 + FLG is a multiple of 31, 31 rather than 0 as zlib's ``deflate`` writes it); the deflate
    data and the Adler-32 after it are unchanged."""
    cmf = (WINDOW - 8) << 4 | 8
    flg = stream[1] & 0xE0   # FLEVEL and FDICT as they were
    flg |= 31 - ((cmf << 8) | flg) % 31
    return bytes((cmf, flg)) + stream[2:]
