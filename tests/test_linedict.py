"""Kept lines packed with the preset dictionary of transcript lines (``linedict``): every line comes
back byte for byte, rows packed before read as before, the shipped dictionary never changes, and a
row naming a dictionary this version lacks (another machine's, or forged) is refused by name, with
a bomb still bounded."""

import json
import zlib

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from claude_chats import linedict, rawlines

# The id (adler32) of the dictionary shipped on 2026-12-05. Rows packed with it name it in their
# header: if this test fails, the shipped dictionary was edited and those rows no longer unpack.
SHIPPED = {0xC413BBC9: "DICTIONARY_2026_12"}


def test_the_shipped_dictionary_never_changes():
    assert {zlib.adler32(getattr(linedict, name)): name for name in SHIPPED.values()} == \
        {k: v for k, v in SHIPPED.items()}
    assert set(SHIPPED) <= set(linedict.DICTIONARIES)
    assert linedict.DICTIONARIES[zlib.adler32(linedict.CURRENT)] is linedict.CURRENT


def a_line(text, tool_result=False):
    """A line as Claude Code 2.1 writes one (made here, not copied from a transcript)."""
    envelope = {"parentUuid": "7b1d3c0e-5f3a-4e55-9a43-1f0c2d9e8a11", "isSidechain": False,
                "userType": "external", "cwd": "/home/dev/project", "sessionId": "0d2c9f6e-3b8a-4d71-8e2f-6c5b4a3d2e1f",
                "version": "2.1.332", "gitBranch": "main", "type": "user",
                "timestamp": "2026-12-05T03:00:00.000Z", "uuid": "c9e8d7f6-a5b4-4c3d-9e2f-1a0b9c8d7e6f"}
    if tool_result:
        envelope["message"] = {"role": "user", "content": [{"tool_use_id": "toolu_01AbC", "type": "tool_result",
                                                             "content": text, "is_error": False}]}
        envelope["toolUseResult"] = {"stdout": text, "stderr": "", "interrupted": False, "isImage": False}
    else:
        envelope["message"] = {"role": "user", "content": [{"type": "text", "text": text}]}
    return json.dumps(envelope, separators=(",", ":")).encode()


def test_a_line_is_packed_with_the_dictionary_and_comes_back_whole():
    raw = a_line("the migration test fails on CI every other run", tool_result=True)
    packed = rawlines.pack(raw)
    assert rawlines.is_packed(packed) and linedict.dictionary_id(packed) == zlib.adler32(linedict.CURRENT)
    assert rawlines.unpack(packed) == raw
    assert rawlines.pack(packed) is packed                       # packed once only
    assert len(packed) < len(zlib.compress(raw, rawlines.LEVEL)) - 60   # the envelope costs less


def test_a_row_packed_before_the_dictionary_reads_as_before():
    raw = a_line("an older row")
    old = zlib.compress(raw, 6)
    assert linedict.dictionary_id(old) is None and rawlines.unpack(old) == raw


@seed(5)
@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000) | st.text(max_size=600).map(lambda t: a_line(t, tool_result=len(t) % 2 == 1)))
def test_any_bytes_come_back_byte_for_byte(raw):
    raw = b"{" + raw   # a line starts with "{" (a row starting with "x" is taken as packed)
    assert rawlines.unpack(rawlines.pack(raw)) == raw


def forged(payload, zdict):
    stream = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, zdict)
    return stream.compress(payload) + stream.flush()


def test_a_dictionary_this_version_lacks_is_refused_by_name():
    blob = forged(a_line("from a newer version"), b'{"a newer dictionary":""}')
    named = linedict.dictionary_id(blob)
    assert named not in linedict.DICTIONARIES
    with pytest.raises(rawlines.UnpackError, match=f"dictionary this version does not have \\({named:08x}\\)"):
        rawlines.unpack(blob)


@pytest.mark.parametrize("bad", ["garbage after the header", "cut short", "header only"])
def test_a_broken_row_naming_the_dictionary_is_an_unpack_error(bad):
    good = rawlines.pack(a_line("x" * 500))
    blob = {"garbage after the header": good[:6] + b"\xff" * 40, "cut short": good[:len(good) // 2],
            "header only": good[:6]}[bad]
    with pytest.raises(rawlines.UnpackError):
        rawlines.unpack(blob)


def test_a_bomb_packed_with_the_dictionary_is_stopped_at_the_limit():
    stream = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS, 9, zlib.Z_DEFAULT_STRATEGY, linedict.CURRENT)
    blob = stream.compress(b"{" + b"\0" * (8 << 20)) + stream.flush()     # 8 MB from about 8 KB
    with pytest.raises(rawlines.UnpackError, match="more than 1048576 bytes"):
        rawlines.unpack(blob, limit=1 << 20)
