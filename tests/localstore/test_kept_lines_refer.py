"""Issue 22: a kept line refers to its messages' text instead of holding it twice (``rawlines.refer``,
``localstore.keptlines``). What restore reads back is the line's own bytes; a purge, a redaction, a
push and a hostile line keep what they kept before."""

import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_chats import linedict, rawlines
from claude_chats.localstore import erase, keptlines, outbox, writer
from claude_chats.redact import redact
from tests.support import ROOT, lines
from tests.support.journals import kept_line_bytes, store_files

FIXTURES = ROOT / "tests" / "claude_code" / "fixtures"
SECRET = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
LONG = ("the flaky migration test fails because the id sequence is not reset between runs " * 2).strip()


def _encode(*objs):
    """Lines as Claude Code writes them: compact, non-ASCII as it is."""
    return b"".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for o in objs)


def _kept_original(path):
    return [line for line in path.read_bytes().splitlines() if rawlines.kept(json.loads(line))]


def _packed_counts(conn):
    return dict(conn.execute("SELECT packed, count(*) FROM raw_lines WHERE line IS NOT NULL GROUP BY packed"))


def _stored_bytes(conn):
    return conn.execute("SELECT sum(length(line)) FROM raw_lines").fetchall()[0][0]


@pytest.mark.parametrize("by", ["import", "hook then sync"])
def test_real_transcripts_read_back_byte_for_byte_and_take_less_room(empty_journal, by):
    conn = empty_journal.conn
    files = sorted(FIXTURES.rglob("*.jsonl"))
    store_files(empty_journal, files, by)
    counts = _packed_counts(conn)
    assert counts.get(rawlines.REFERRING, 0) >= 10, counts
    for path in files:
        if path.name.startswith("agent-"):
            continue
        kept = empty_journal.kept_lines(path.stem)[path.stem]
        assert [line for _k, _p, line in kept if line is not None] == _kept_original(path), path
    # the same lines packed whole take more room
    whole = sum(len(rawlines.pack(line)) for line in kept_line_bytes(conn))
    assert _stored_bytes(conn) < whole - 2000, (_stored_bytes(conn), whole)


def test_the_text_is_referred_once_however_often_the_line_holds_it(empty_journal, tmp_path):
    path = tmp_path / "sess-1.jsonl"
    result = {"stdout": LONG, "stderr": "", "interrupted": False}
    user = lines.user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": LONG}], uid="u-1",
                      toolUseResult=result)
    path.write_bytes(_encode(user))
    assert not empty_journal.import_files([str(path)]).errors
    conn = empty_journal.conn
    (line, packed), = conn.execute("SELECT line, packed FROM raw_lines").fetchall()
    assert packed == rawlines.REFERRING
    marked = rawlines.unpack_referring(line)
    assert LONG.encode() not in marked and marked.count(b"\x001\x00") == 2   # two references to message 1
    assert kept_line_bytes(conn) == _kept_original(path)


@pytest.mark.parametrize("text", [
    LONG + ' "quoted" and a back\\slash \\" tricky',
    LONG + " ümlaut 漢字 and 🎉 emoji, a tab\there, a line\nbreak, a \x07 bell",
    LONG + " \u2028 line separator \x7f delete",
    "\\" * 60,
    LONG + " an escaped NUL \x00 in the text",
    LONG + "\x00123\x00 looks like a reference",
])
def test_texts_that_json_escapes_read_back_exact(empty_journal, tmp_path, text):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(_encode(lines.user(text, uid="u-1"), lines.assistant(text, uid="a-1")))
    assert not empty_journal.import_files([str(path)]).errors
    # the journal stores a text without its NULs (the parser drops them): that line's text is not its message's
    # (the line still refers to its own fields)
    named = [rawlines.referred(rawlines.unpack_referring(line)) for (line,) in
             empty_journal.conn.execute("SELECT line FROM raw_lines WHERE packed = ?", (rawlines.REFERRING,))]
    assert len(named) == 2 and all(bool(ids) is ("\x00" not in text) for ids in named), named
    assert kept_line_bytes(empty_journal.conn) == _kept_original(path)


def test_a_text_the_parser_stripped_is_referred_inside_its_string(empty_journal, tmp_path):
    """Tool output with its leading spaces, thinking with its leading blank lines: the message holds the
    text stripped, the line refers to it and keeps the white space."""
    path = tmp_path / "sess-1.jsonl"
    output = "     1\u2192" + LONG + "\n     2\u2192\n"
    user = lines.user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": output}], uid="u-1")
    thinking = lines.assistant([{"type": "thinking", "thinking": "\n\n\t " + LONG, "signature": "c2ln"}], uid="a-1")
    path.write_bytes(_encode(user, thinking))
    assert not empty_journal.import_files([str(path)]).errors
    conn = empty_journal.conn
    assert _packed_counts(conn) == {rawlines.REFERRING: 2}
    for (line,) in conn.execute("SELECT line FROM raw_lines"):
        assert LONG.encode() not in rawlines.unpack_referring(line)
    assert kept_line_bytes(conn) == _kept_original(path)


def test_a_line_written_otherwise_than_the_text_stays_whole_and_exact(empty_journal, tmp_path):
    """Non-ASCII written as escapes (not as Claude Code writes it), a raw NUL in the line: not referred."""
    path = tmp_path / "sess-1.jsonl"
    escaped = json.dumps(lines.user(LONG + " ümlaut", uid="u-1")).encode()   # ensure_ascii: \\u00fc
    path.write_bytes(escaped + b"\n")
    assert not empty_journal.import_files([str(path)]).errors
    assert _packed_counts(empty_journal.conn) == {1: 1}
    assert kept_line_bytes(empty_journal.conn) == [escaped]


def test_a_redaction_of_the_messages_reaches_the_lines_that_refer_to_them(empty_journal, tmp_path):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(_encode(lines.user(f"{LONG} my token is {SECRET}", uid="u-1"),
                             lines.assistant(f"{LONG} noted, {SECRET} will be rotated", uid="a-1")))
    assert not empty_journal.import_files([str(path)]).errors
    conn = empty_journal.conn
    assert _packed_counts(conn) == {rawlines.REFERRING: 2}
    assert all(SECRET.encode() in line for line in kept_line_bytes(conn))
    counts = erase.redact_stored(conn, redact)
    assert counts["messages"] == 2
    restored = kept_line_bytes(conn)
    assert len(restored) == 2 and all(SECRET.encode() not in line and b"[REDACTED:" in line for line in restored)
    assert all(json.loads(line)["uuid"] for line in restored)
    assert _packed_counts(conn) == {rawlines.REFERRING: 2}   # still referring, to the redacted texts
    for (line,) in conn.execute("SELECT line FROM raw_lines"):
        assert SECRET.encode() not in rawlines.unpack_referring(line)


def test_a_purge_up_to_a_time_leaves_no_line_without_its_messages(empty_journal, tmp_path):
    path = tmp_path / "sess-1.jsonl"
    early = [lines.user(f"{LONG} early {i}", uid=f"e-{i}", ts=f"2026-01-01T00:00:0{i}.000Z") for i in range(3)]
    late = [lines.assistant(f"{LONG} late {i}", uid=f"l-{i}", ts=f"2026-02-01T00:00:0{i}.000Z") for i in range(3)]
    path.write_bytes(_encode(*early, *late))
    assert not empty_journal.import_files([str(path)]).errors
    conn = empty_journal.conn
    assert _packed_counts(conn) == {rawlines.REFERRING: 6}
    erase.purge_local(conn, erase.Target("session", "sess-1", before="2026-01-15T00:00:00Z"))
    assert [k for (k,) in conn.execute("SELECT key FROM raw_lines ORDER BY seq")] == ["l-0", "l-1", "l-2"]
    assert kept_line_bytes(conn) == _kept_original(path)[3:]


def test_a_line_whose_message_is_gone_is_an_error_never_another_text(empty_journal, tmp_path):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(_encode(lines.user(f"{LONG} one", uid="u-1")))
    other = tmp_path / "sess-2.jsonl"
    other.write_bytes(_encode(lines.user(f"{LONG} two", uid="u-2", session="sess-2")))
    assert not empty_journal.import_files([str(path), str(other)]).errors
    conn = empty_journal.conn
    (mine, key, created, line), = conn.execute("SELECT m.id, r.key, chats_time(r.created_at), r.line FROM raw_lines r "
                                               "JOIN messages m ON m.uuid = r.key "
                                 "WHERE r.session = (SELECT number FROM session_numbers "
                                 "WHERE session_id = 'sess-1')").fetchall()
    theirs, = conn.execute("SELECT id FROM messages WHERE session = (SELECT number FROM session_numbers WHERE session_id = 'sess-2')").fetchall()[0]
    # a line pointed at another session's message (a journal changed by hand) does not read it
    forged = rawlines.pack_referring(rawlines.unpack_referring(line).replace(b"\x00%d\x00" % mine,
                                                                            b"\x00%d\x00" % theirs))
    with pytest.raises(rawlines.UnpackError, match="no longer has"):
        keptlines.read_line(conn, "sess-1", key, created, forged, rawlines.REFERRING)
    conn.execute("DELETE FROM messages WHERE id = ?", (mine,))   # by hand: no command does this
    with pytest.raises(rawlines.UnpackError, match=f"message {mine}"):
        empty_journal.kept_lines("sess-1")
    # and ``rawlines.unpack`` (Postgres' lines, any line without its journal) never reads one
    with pytest.raises(rawlines.UnpackError, match="refers to its messages"):
        rawlines.unpack(line)
    # a version before this one takes it for zlib (``is_packed``), names no dictionary, and zlib refuses it
    assert rawlines.is_packed(line) and linedict.dictionary_id(line) is None
    with pytest.raises(zlib.error, match="incorrect header check"):
        zlib.decompressobj().decompress(line)


def test_the_bound_holds_for_the_line_rebuilt(empty_journal, tmp_path):
    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(_encode(lines.user("x" * 5000, uid="u-1")))
    assert not empty_journal.import_files([str(path)]).errors
    conn = empty_journal.conn
    row, = conn.execute("SELECT n.session_id, key, chats_time(created_at), line, packed FROM raw_lines JOIN session_numbers n ON n.number = raw_lines.session").fetchall()
    assert len(rawlines.unpack_referring(row[3])) < 1000
    with pytest.raises(rawlines.UnpackError, match="more than 2000 bytes"):
        keptlines.read_line(conn, *row, limit=2000)


def test_a_row_naming_one_text_a_million_times_is_refused_before_it_is_built():
    """A forged row (64 KB of references to a 100 KB text would be 2 GB): refused at the bound, and the
    memory it takes stays near the bound."""
    import tracemalloc

    text = "y" * 100_000
    marked = b'{"a":"' + b"\x007\x00" * 20_000 + b'"}'
    tracemalloc.start()
    try:
        with pytest.raises(rawlines.UnpackError, match="more than 1048576 bytes"):
            rawlines.rebuild(marked, {7: text}, limit=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak


def test_postgres_gets_every_line_whole(empty_journal, tmp_path, pg_db_url):
    import psycopg

    from claude_chats import config
    from claude_chats.sync.runner import run_sync
    from tests.support.fakes import HashEmbedder

    path = tmp_path / "sess-1.jsonl"
    path.write_bytes(_encode(lines.user(f"{LONG} question", uid="u-1"), lines.assistant(f"{LONG} answer", uid="a-1")))
    assert not empty_journal.import_files([str(path)]).errors
    assert _packed_counts(empty_journal.conn) == {rawlines.REFERRING: 2}
    report = run_sync(config.load({"database_url": pg_db_url}), journal=empty_journal, provider=HashEmbedder(),
                      lock=False)
    assert report.ok and report.raw_lines == 2, report.errors
    with psycopg.connect(pg_db_url) as pg:
        pushed = [rawlines.unpack(bytes(line)) for (line,) in pg.execute("SELECT line FROM raw_lines ORDER BY seq")]
    assert pushed == _kept_original(path)
    assert _packed_counts(empty_journal.conn) == {rawlines.REFERRING: 2}   # the journal's stay referring


_TEXT = st.text(st.characters(codec="utf-8"), min_size=0, max_size=120)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=4), other=_TEXT, key_text=st.booleans())
def test_any_text_anywhere_in_a_line_rebuilds_exact(texts, other, key_text):
    """Property: a line holding texts as values, as keys, inside other strings, rebuilds to its bytes."""
    obj = {"a": texts, "inside": f"{other}{texts[0]}{other}", "o": {t: other for t in texts} if key_text else other}
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    refs = list(enumerate(texts, start=7))
    marked = rawlines.refer(raw, refs)
    if marked is None:
        return
    assert rawlines.referred(marked) <= {i for i, _t in refs}
    assert rawlines.rebuild(marked, dict(refs)) == raw
    # redacted texts still make valid JSON, with the new text where the old one was a whole string
    changed = {i: f"[{t}]" for i, t in refs}
    rebuilt = json.loads(rawlines.rebuild(marked, changed))
    assert isinstance(rebuilt, dict) and set(rebuilt) == set(obj)


def test_bytes_that_look_like_a_text_between_two_strings_are_not_referred():
    """``["A",111...,"B",",111...,"]``: the bytes from A's closing quote to B's opening one are the JSON of
    the text too; only the string is referred, so a redacted text still makes valid JSON."""
    digits = "1" * 60
    text = f",{digits},"
    raw = json.dumps(["A", int(digits), "B", text], separators=(",", ":")).encode()
    assert raw.count(json.dumps(text).encode()) == 2
    marked = rawlines.refer(raw, [(5, text)])
    assert marked == b'["A",' + digits.encode() + b',"B","\x005\x00"]'
    assert json.loads(rawlines.rebuild(marked, {5: "[REDACTED]"})) == ["A", int(digits), "B", "[REDACTED]"]


def test_lines_packed_whole_by_a_version_before_are_referred_a_share_a_sync(empty_journal):
    from claude_chats import config
    from claude_chats.sync.runner import run_sync
    from tests.support.fakes import HashEmbedder

    conn = empty_journal.conn
    stats = writer.IngestStats(pack=lambda _conn, _s, _k, _c, raw: (rawlines.pack(raw), 1))   # as before
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        writer.ingest_file(conn, str(path), stats)
    whole, size = kept_line_bytes(conn), _stored_bytes(conn)
    assert _packed_counts(conn).get(rawlines.REFERRING) is None
    assert outbox.refer_packed_lines(conn, at_most=40) == 40   # a share a run, oldest first
    assert conn.execute("SELECT count(*) FROM raw_lines WHERE packed = 2 AND id > "
                        "(SELECT value FROM state WHERE key = ?)", (outbox.REFERRED_UPTO,)).fetchall() == [(0,)]
    report = run_sync(config.load({}), journal=empty_journal, provider=HashEmbedder(), lock=False)   # the rest
    assert report.ok, report.errors
    assert _packed_counts(conn).get(rawlines.REFERRING, 0) >= 10
    assert kept_line_bytes(conn) == whole and _stored_bytes(conn) < size - 2000
    assert outbox.refer_packed_lines(conn) == 0   # and none is looked at twice
