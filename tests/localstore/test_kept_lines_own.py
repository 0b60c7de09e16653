"""Issue 22: a kept line refers to its row's own fields (its uuid, session id and timestamp:
``rawlines.refer_own``), which the row holds already. Restore, the push and a redaction read it back
byte for byte; an older form still reads; a forged or damaged row is an error, never another line."""

import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_chats import rawlines
from claude_chats.localstore import keptlines, uuids
from tests.support import ROOT, lines
from tests.support.journals import kept_line_bytes, store_files

FIXTURES = ROOT / "tests" / "claude_code" / "fixtures"
SESSION = "2b1d1779-4787-431e-84ec-b1a180f18ff7"
LONG = ("the flaky migration test fails because the id sequence is not reset between runs " * 2).strip()


def _encode(*objs):
    """Lines as Claude Code writes them: compact, non-ASCII as it is."""
    return b"".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for o in objs)


def _rows(conn):
    return conn.execute("SELECT n.session_id, chats_uuid(key), chats_time(created_at), line, packed FROM raw_lines JOIN session_numbers n ON n.number = raw_lines.session WHERE line IS NOT NULL "
                        "ORDER BY id").fetchall()


def _kept_original(path):
    return [line for line in path.read_bytes().splitlines() if rawlines.kept(json.loads(line))]


def test_real_lines_the_hook_stored_refer_to_their_own_fields_once_synced_and_read_back_exact(empty_journal):
    """(``chats import`` packs with the same ``keptlines.pack_line``: the next test.)"""
    conn = empty_journal.conn
    files = sorted(FIXTURES.rglob("*.jsonl"))
    store_files(empty_journal, files, "hook then sync")
    rows = _rows(conn)
    own = [row for row in rows if row[4] == rawlines.REFERRING and rawlines.refers_own(row[3])]
    assert len(own) >= 0.9 * len(rows), (len(own), len(rows))
    marked = [rawlines.unpack_referring(row[3]) for row in own]
    for (session, key, created, _line, _packed), line in zip(own, marked):
        if "@" not in key:   # (a line without a uuid is keyed by its checksum, and has no timestamp)
            assert b'"uuid":"\x00k\x00"' in line and key.encode() not in line
            assert created.encode() not in line
        if not session.count(":"):   # (a subagent's lines name the session that ran it)
            assert b'"sessionId":"' + session.encode() not in line and b'"sessionId":"\x00s\x00"' in line
    for path in files:
        if not path.name.startswith("agent-"):
            kept = empty_journal.kept_lines(path.stem)[path.stem]
            assert [line for _k, _p, line in kept if line is not None] == _kept_original(path), path


def test_the_own_fields_take_less_room_than_the_lines_referring_to_texts_alone(empty_journal):
    """What this saves, on the real fixtures: the stored lines against the same lines referring to their
    messages' text only (the form before)."""
    conn = empty_journal.conn
    assert not empty_journal.import_files([str(p) for p in sorted(FIXTURES.rglob("*.jsonl"))]).errors
    now = before = count = 0
    for row, raw in zip(_rows(conn), kept_line_bytes(conn, "line IS NOT NULL ORDER BY id --")):
        session, key, created, line, packed = row
        texts = conn.execute(keptlines._TEXTS, (uuids.pack(key), session, created, uuids.after(key))).fetchall()
        marked = rawlines.refer(raw, texts) if texts else None
        before += len(rawlines.pack(raw) if marked is None else rawlines.REFERS + rawlines.pack(marked))
        now, count = now + len(line), count + 1
    assert before - now > 40 * count, (before / count, now / count)


def test_a_line_in_the_older_form_still_reads_and_an_older_version_refuses_the_new(empty_journal, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(_encode(lines.user(LONG, session=SESSION, uid="1c0ffee0-0000-4000-8000-000000000001")))
    assert not empty_journal.import_files([str(path)]).errors
    conn = empty_journal.conn
    (session, key, created, line, packed), = _rows(conn)
    assert rawlines.refers_own(line)
    raw = kept_line_bytes(conn)[0]
    # the form before (texts alone, behind REFERS), written by a version before this one: read as it was
    (mid,), = conn.execute("SELECT id FROM messages").fetchall()
    older = rawlines.REFERS + rawlines.pack(rawlines.refer(raw, [(mid, LONG)]))
    assert keptlines.read_line(conn, session, key, created, older, packed) == raw
    # ... and it never takes a reference to a field from a row (a line of that form names none)
    forged = rawlines.REFERS + rawlines.unpack_referring(line)
    with pytest.raises(rawlines.UnpackError):
        keptlines.read_line(conn, session, key, created, rawlines.REFERS + rawlines.pack(forged[2:]), packed)
    # a version before this one: its ``unpack_referring`` knew REFERS only, and zlib refuses the rest
    assert line[:2] != rawlines.REFERS
    with pytest.raises(zlib.error, match="incorrect header check"):
        zlib.decompressobj().decompress(line)


def test_a_row_without_its_fields_is_an_error_never_another_line(empty_journal, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(_encode(lines.user(LONG, session=SESSION, uid="1c0ffee0-0000-4000-8000-000000000002")))
    assert not empty_journal.import_files([str(path)]).errors
    (session, key, _created, line, packed), = _rows(empty_journal.conn)
    with pytest.raises(rawlines.UnpackError, match="timestamp, which it is not given"):
        keptlines.read_line(empty_journal.conn, session, key, None, line, packed)
    # the bound counts the fields put back too
    with pytest.raises(rawlines.UnpackError, match="more than"):
        keptlines.read_line(empty_journal.conn, session, key, "2" * 5000, line, packed, limit=4000)


_VALUE = st.text(st.characters(codec="utf-8"), min_size=0, max_size=50)


@settings(max_examples=300, deadline=None)
@given(key=_VALUE, session=_VALUE, stamp=_VALUE, other=_VALUE, twice=st.booleans())
def test_any_fields_anywhere_in_a_line_rebuild_exact(key, session, stamp, other, twice):
    """Property: whatever the row's values (escapes, quotes, NULs, strings that look like references) and
    wherever the line repeats them, the line rebuilds to its bytes, or is not referred."""
    obj = {"uuid": key, "x": f"{other}{key}", "sessionId": session, "timestamp": stamp, "o": [other, stamp]}
    if twice:
        obj["nested"] = {"uuid": key, "timestamp": stamp, "sessionId": other}
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    own = rawlines.own_values(key, session, stamp)
    marked = rawlines.refer_line(raw, [], own)
    if marked is not None:
        assert rawlines.rebuild(marked, {}, own=own) == raw
        assert not rawlines.referred(marked)


def test_a_redaction_rewrites_a_line_that_refers_to_its_fields(empty_journal, tmp_path):
    from claude_chats.localstore import erase
    from claude_chats.redact import redact

    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(_encode(lines.user(LONG, session=SESSION, uid="1c0ffee0-0000-4000-8000-000000000003",
                                        toolUseResult={"stdout": f"token {secret}"})))
    assert not empty_journal.import_files([str(path)]).errors
    conn = empty_journal.conn
    erase.redact_stored(conn, redact)
    raw = kept_line_bytes(conn)[0]
    assert secret.encode() not in raw and json.loads(raw)["uuid"] == "1c0ffee0-0000-4000-8000-000000000003"
    assert rawlines.refers_own(_rows(conn)[0][3])
