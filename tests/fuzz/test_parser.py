"""Fuzzing the transcript parser in-process: any bytes in, well-formed records out, never an exception.

The strategies (transcript lines valid, mutated and hostile) are in
tests/support/fuzzing.py, shared with the journal and hook fuzz tests. Hypothesis
runs on fixed seeds with a moderate number of examples; CLAUDE_CHATS_LONG_TESTS=1
runs many more.
"""

from hypothesis import given, seed
from hypothesis import strategies as st

from claude_chats import transcript
from tests.support.fuzzing import FILE_NAMES, encoded_line, fuzz_settings, transcript_bytes

# -- properties ---------------------------------------------------------------------------

def check_records(result, data, final=False):
    assert result.consumed == (len(data) if final else data.rfind(b"\n") + 1)
    for r in result.records:
        assert isinstance(r.uuid, str) and r.uuid
        assert isinstance(r.session_id, str) and r.session_id
        assert isinstance(r.text, str) and r.text and "\x00" not in r.text
        assert r.kind in transcript.KINDS and r.role in ("user", "assistant", "system")
        for value in (r.uuid, r.session_id, r.text, r.timestamp, r.cwd, r.git_branch, r.message_id, r.slug,
                      r.agent_id, r.parent_session_id):
            assert value is None or isinstance(value, str) and _storable(value)
    for t in result.titles:
        assert isinstance(t.value, str) and t.value and t.source in ("custom", "agent_name", "ai", "summary")
        assert all(v is None or _storable(v) for v in (t.value, t.session_id, t.leaf_uuid))
    assert all(isinstance(n, int) and n > 0 for n in result.skipped.values())


def _storable(text):
    """SQLite takes it: valid UTF-8 (no lone surrogate from a JSON escape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@seed(101)
@fuzz_settings(120, 10_000)
@given(transcript_bytes, st.sampled_from(FILE_NAMES), st.booleans())
def test_parser_never_raises_and_emits_well_formed_records(data, name, final):
    result = transcript.parse_lines(data, transcript.FileContext.for_path("/p/" + name), final=final)
    check_records(result, data, final)


@seed(102)
@fuzz_settings(200, 5_000)
@given(st.binary(max_size=2000), st.sampled_from(FILE_NAMES))
def test_parser_survives_random_bytes(data, name):
    check_records(transcript.parse_lines(data, transcript.FileContext.for_path(name)), data)


@seed(103)
@fuzz_settings(80, 3_000)
@given(st.lists(encoded_line, min_size=1, max_size=10), st.data())
def test_a_line_never_depends_on_how_the_file_was_cut(encoded, data):
    """Reading a file in pieces (as the hook does, turn by turn) yields the lines' records, whatever the cut."""
    whole = b"\n".join(encoded) + b"\n"
    ctx = transcript.FileContext.for_path("/p/sess-1.jsonl")
    expected = transcript.parse_lines(whole, ctx)
    cut = data.draw(st.integers(0, len(whole)))
    ctx2 = transcript.FileContext.for_path("/p/sess-1.jsonl")
    first = transcript.parse_lines(whole[:cut], ctx2)
    second = transcript.parse_lines(whole[first.consumed:], ctx2)
    assert first.consumed + second.consumed == len(whole)
    assert {r.uuid for r in first.records} | {r.uuid for r in second.records} >= {r.uuid for r in expected.records}
